import Foundation
import Testing
import ContainerStore
import ItemModel
import S3Store
import SeaweedFSFixture

/// The same contract for every store: a store that passes this can hold a container.
/// S3 runs against two real services the tests start on 127.0.0.1: SeaweedFS and Ceph's
/// RADOS Gateway.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case localFolder, memory, s3, ceph
    var testDescription: String { rawValue }

    func make() async throws -> any ContainerStore {
        switch self {
        case .memory: return InMemoryStore()
        case .localFolder:
            let root = try TemporaryDirectories.make("ubiqfs-store")
            return try LocalFolderStore(root: root, container: "c")
        case .s3:
            // A fresh prefix per test: tests share the server and the bucket.
            return try await SeaweedServer.shared().store(prefix: "conformance-\(UUID().uuidString.prefix(8))", container: "c")
        case .ceph:
            return try await CephServer.shared().store(prefix: "conformance-\(UUID().uuidString.prefix(8))", container: "c")
        }
    }
}

@Suite struct StoreConformanceTests {
    @Test(arguments: StoreKind.allCases)
    func putGetAndRanges(kind: StoreKind) async throws {
        let store = try await kind.make()
        try await store.put("blocks/abc", Array("hello world".utf8))
        #expect(try await store.get("blocks/abc") == Array("hello world".utf8))
        #expect(try await store.get("blocks/abc", range: 6..<11) == Array("world".utf8))
        #expect(try await store.get("blocks/abc", range: 6..<100) == Array("world".utf8))
        try await store.put("blocks/abc", Array("replaced".utf8))
        #expect(try await store.get("blocks/abc") == Array("replaced".utf8))
        #expect(try await store.exists("blocks/abc"))
        #expect(try await !store.exists("blocks/nope"))
        await #expect(throws: StoreError.self) { _ = try await store.get("blocks/nope") }
    }

    /// A streamed range is the ranged `get`'s bytes, in order; a range past the end gives
    /// what is there; an absent object is not found.
    @Test(arguments: StoreKind.allCases)
    func streamedRangesAreTheRangesBytes(kind: StoreKind) async throws {
        let store = try await kind.make()
        var random = SplitMix64(seed: 41)
        let object = (0..<(3 << 20) + 12345).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        try await store.put("packs/p1", object)
        for range: Range<Int64> in [0 ..< Int64(object.count), 1000 ..< 2_000_000, 3 << 20 ..< 4 << 20, 17 ..< 18] {
            var received: [UInt8] = []
            try await store.stream("packs/p1", range: range) { piece in received += piece }
            let end = min(Int(range.upperBound), object.count)
            #expect(received == Array(object[Int(range.lowerBound) ..< end]), "range \(range)")
        }
        var pastTheEnd: [UInt8] = []
        try await store.stream("packs/p1", range: Int64(object.count) + 10 ..< Int64(object.count) + 20) { pastTheEnd += $0 }
        #expect(pastTheEnd.isEmpty)
        try await store.stream("packs/p1", range: 5 ..< 5) { #expect($0.isEmpty) }
        await #expect(throws: StoreError.self) { try await store.stream("packs/nope", range: 0 ..< 10) { _ in } }
        await #expect(throws: StoreError.self) { try await store.stream("packs/nope", range: 3 ..< 3) { _ in } }
    }

    @Test(arguments: StoreKind.allCases)
    func putIfAbsentHasOneWinner(kind: StoreKind) async throws {
        let store = try await kind.make()
        let winners = await withTaskGroup(of: Bool.self) { group in
            for writer in 0..<16 {
                group.addTask { (try? await store.putIfAbsent("journal/00000000000000000001", Array("writer \(writer)".utf8))) ?? false }
            }
            var count = 0
            for await won in group where won { count += 1 }
            return count
        }
        #expect(winners == 1)
        let content = String(decoding: try await store.get("journal/00000000000000000001"), as: UTF8.self)
        #expect(content.hasPrefix("writer "))
        #expect(try await !store.putIfAbsent("journal/00000000000000000001", [1]))
        #expect(String(decoding: try await store.get("journal/00000000000000000001"), as: UTF8.self) == content)
    }

    @Test(arguments: StoreKind.allCases)
    func listIsOrderedAndPaged(kind: StoreKind) async throws {
        let store = try await kind.make()
        for seq in [3, 1, 2, 10, 5] as [UInt64] {
            _ = try await store.putIfAbsent(ContainerLayout.journalKey(seq), [UInt8(seq)])
        }
        try await store.put("blocks/x", [0])
        let all = try await store.list(prefix: "journal/", startAfter: nil, limit: 100)
        #expect(all == [1, 2, 3, 5, 10].map { ContainerLayout.journalKey($0) })
        let after = try await store.list(prefix: "journal/", startAfter: ContainerLayout.journalKey(2), limit: 2)
        #expect(after == [ContainerLayout.journalKey(3), ContainerLayout.journalKey(5)])
        #expect(try await store.list(prefix: "checkpoints/", startAfter: nil, limit: 10).isEmpty)
        try await store.delete("blocks/x")
        try await store.delete("blocks/x")
        #expect(try await store.list(prefix: "blocks/", startAfter: nil, limit: 10).isEmpty)
    }

    @Test func localFolderStoreRefusesKeysThatClimb() async throws {
        let store = try await StoreKind.localFolder.make()
        for key in ["../escape", "journal/../../x", "/etc/passwd", "blocks/.hidden", ""] {
            await #expect(throws: StoreError.self) { try await store.put(key, [1]) }
        }
    }

    @Test func unreachableIsNotNotFound() async throws {
        let store = InMemoryStore()
        try await store.put("container.json", [1])
        store.isReachable = false
        do {
            _ = try await store.get("container.json")
            Issue.record("an offline store answered")
        } catch {
            #expect(error.code == .unreachable)
        }
    }
}
