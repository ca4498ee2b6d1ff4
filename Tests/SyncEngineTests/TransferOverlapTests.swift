import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import MetadataStore
@testable import SyncEngine
import Synchronization
import Testing

/// Over a far store, the transfers of many files overlap: a push uploads its files' blocks
/// at once (small blocks without asking first), and downloads of many files run together.
@Suite struct TransferOverlapTests {
    /// A store that is 20 ms away, counting the calls on blocks and the most at once.
    final class FarStore: ContainerStore {
        let base = InMemoryStore()
        private struct Counts {
            var running = 0
            var peak = 0
            var puts = 0
            var gets = 0
            var exists = 0
        }
        private let counts = Mutex(Counts())
        var displayName: String { "far memory" }

        var peak: Int { counts.withLock { $0.peak } }
        var calls: (puts: Int, gets: Int, exists: Int) { counts.withLock { ($0.puts, $0.gets, $0.exists) } }
        func resetPeak() { counts.withLock { $0.peak = 0 } }

        private func far<T>(_ key: String, _ count: WritableKeyPath<Counts, Int>?, _ body: () async throws(StoreError) -> T) async throws(StoreError) -> T {
            let block = key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix)
            counts.withLock { counts in
                guard block, let count else { return }
                counts[keyPath: count] += 1
                counts.running += 1
                counts.peak = max(counts.peak, counts.running)
            }
            defer { if block && count != nil { counts.withLock { $0.running -= 1 } } }
            try? await Task.sleep(for: .milliseconds(20))
            return try await body()
        }

        func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
            try await far(key, \.gets) { () throws(StoreError) in try await base.get(key, range: range) }
        }
        func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
            try await far(key, \.puts) { () throws(StoreError) in try await base.put(key, bytes) }
        }
        func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
            try await far(key, nil) { () throws(StoreError) in try await base.putIfAbsent(key, bytes) }
        }
        func exists(_ key: String) async throws(StoreError) -> Bool {
            try await far(key, \.exists) { () throws(StoreError) in try await base.exists(key) }
        }
        func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
            try await far(prefix, nil) { () throws(StoreError) in try await base.list(prefix: prefix, startAfter: startAfter, limit: limit) }
        }
        func delete(_ key: String) async throws(StoreError) {
            try await far(key, nil) { () throws(StoreError) in try await base.delete(key) }
        }
    }

    /// Files past the small-file limit (256 KiB): two blocks each, in a pack of their own.
    static func unpacked(_ index: Int) -> [UInt8] {
        (0..<300_000).map { UInt8(truncatingIfNeeded: ($0 &* 7 &+ index &* 131) ^ ($0 >> 9) ^ index) }
    }

    @Test func aPushUploadsManyFilesAtOnceInOneRecord() async throws {
        let store = FarStore()
        let a = try await TestDevice(store: store, name: "a")
        let records = store.base.count(under: ContainerLayout.journalPrefix)
        try a.mkdir("src")
        for index in 0..<80 { try await a.write("src/file\(index).bin", Self.unpacked(index)) }
        try await a.sync()

        #expect(store.base.count(under: ContainerLayout.journalPrefix) == records + 1)
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 80 && store.base.count(under: ContainerLayout.blockPrefix) == 0)
        let calls = store.calls
        // One round trip per file (its pack; none asks first), and many at once (one after
        // another before).
        #expect(calls.puts == 80 && calls.exists == 0, "\(calls)")
        #expect(store.peak >= 8, "at most \(store.peak) block transfers ran at once")

        // Another device fetches them as many at once too, and every byte is right.
        let b = try await TestDevice(store: store, name: "b")
        store.resetPeak()
        let inos = (0..<80).compactMap { b.inode("src/file\($0).bin") }
        #expect(inos.count == 80)
        b.engine.downloads.prefetch(inos)
        for index in 0..<80 { #expect(try await b.waitUntilLocal("src/file\(index).bin")) }
        #expect(store.peak >= 8, "at most \(store.peak) downloads ran at once")
        for index in 0..<80 { #expect(try await b.readBytes("src/file\(index).bin") == Self.unpacked(index)) }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func packedNeighboursComeBackWithOneRangedGetPerRun() async throws {
        let store = FarStore()
        let a = try await TestDevice(store: store, name: "a", configuration: PackTests.formatTwo)
        try a.mkdir("src")
        let content = { (index: Int) in (0..<(2000 + index * 37)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) } }
        for index in 0..<60 { try await a.write("src/file\(index).c", content(index)) }
        try await a.sync()
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 1)

        let b = try await TestDevice(store: store, name: "b", configuration: PackTests.formatTwo)
        let before = store.calls.gets
        let inos = (0..<60).compactMap { b.inode("src/file\($0).c") }
        b.engine.downloads.prefetch(inos)
        for index in 0..<60 { #expect(try await b.waitUntilLocal("src/file\(index).c")) }
        // 60 files, 200 KiB side by side in one pack: one GET, not 60.
        #expect(store.calls.gets - before == 1, "\(store.calls.gets - before) GETs")
        for index in 0..<60 { #expect(try await b.readBytes("src/file\(index).c") == content(index)) }

        // A damaged blob fails alone; its neighbours are served.
        let pack = try #require(store.base.keys.first { $0.hasPrefix(ContainerLayout.packPrefix) })
        var bytes = try await store.base.get(pack)
        bytes[10] ^= 0xff
        try await store.base.put(pack, bytes)
        let c = try await TestDevice(store: store, name: "c", configuration: PackTests.formatTwo)
        c.engine.downloads.prefetch((0..<60).compactMap { c.inode("src/file\($0).c") })
        for index in 1..<60 { #expect(try await c.waitUntilLocal("src/file\(index).c")) }
        #expect(try await c.readBytes("src/file59.c") == content(59))
        await #expect(throws: (any Error).self) { try await c.readBytes("src/file0.c") }
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func smallFilesOpenedOneAfterAnotherAreFetchedAheadAndASingleOpenFetchesOnlyItself() async throws {
        let store = FarStore()
        let a = try await TestDevice(store: store, name: "a")
        try a.mkdir("notes")
        for index in 0..<40 { try await a.write("notes/n\(String(format: "%02d", index)).txt", "note \(index)\n") }
        try a.mkdir("other")
        for index in 0..<10 { try await a.write("other/o\(index).txt", "other \(index)\n") }
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")

        // One open alone is a header read: nothing else comes.
        #expect(try await b.read("other/o3.txt") == "other 3\n")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.state(b, "other/o4.txt") == .placeholder)

        // Two in a row through a folder: the next ones are fetched without being read.
        #expect(try await b.read("notes/n00.txt") == "note 0\n")
        #expect(try await b.read("notes/n01.txt") == "note 1\n")
        #expect(try await b.waitUntilLocal("notes/n05.txt"))
        #expect(try await b.waitUntilLocal("notes/n08.txt"))
        // Reading on keeps the window ahead of the reader, and every byte is right.
        for index in 2..<40 {
            #expect(try await b.read("notes/n\(String(format: "%02d", index)).txt") == "note \(index)\n")
        }
        #expect(try await Self.state(b, "other/o5.txt") == .placeholder)
        // In any order (`find` and `tar` go in directory order, not by name): backwards.
        #expect(try await b.read("other/o9.txt") == "other 9\n")
        #expect(try await b.read("other/o8.txt") == "other 8\n")
        #expect(try await b.waitUntilLocal("other/o0.txt"))
        #expect(try await b.waitUntilLocal("other/o6.txt"))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aThrottlingStoreLowersTheTransfersAtOnceAndNothingIsLost() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        link.faults = try StoreFaults(parsing: "throttle=0.3,seed=5")
        for index in 0..<60 { try await a.write("f\(index)", Self.unpacked(index)) }
        try await a.sync()
        let uploads = a.engine.gates.upload.snapshot
        #expect(uploads.throttled > 0)
        #expect(uploads.limit < SyncConfiguration().transfers, "\(uploads)")
        // One pack a file (its two blocks).
        #expect(uploads.done == 60 && uploads.running == 0, "\(uploads)")
        let status = await a.engine.status()
        #expect(status.uploads?.done == 60 && status.pendingFiles == 0)
        link.faults = StoreFaults()
        let b = try await TestDevice(store: store, name: "b")
        for index in 0..<60 { #expect(try await b.readBytes("f\(index)") == Self.unpacked(index)) }
        await a.shutdown()
        await b.shutdown()
    }

    /// A file deleted while it is being uploaded: the upload stops at its next block, so
    /// the deleted content's space is not held until the whole file has gone out.
    @Test func anUploadStopsWhenItsFileIsDeleted() async throws {
        let store = FarStore()
        var configuration = SyncConfiguration()
        configuration.transferBytesInFlight = 4 << 20  // one pack at a time
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        var random = SplitMix64(seed: 3)
        try await a.write("big.bin", (0..<(25 << 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let ino = try #require(a.inode("big.bin"))
        let push = Task { try? await a.sync() }
        while store.calls.puts < 2 { try await Task.sleep(for: .milliseconds(5)) }
        try a.remove("big.bin")
        a.core.forget(ino, count: .max)
        try a.core.fsyncDirectory(Inode.root)  // the delete on disk, its content goes
        #expect(a.cache.status(ino) == nil)
        await push.value
        try await a.sync()
        // 25 MiB are four packs (8 MiB or a little more, then the rest): the rest was never sent.
        #expect(store.calls.puts < 4, "\(store.calls)")
        let b = try await TestDevice(store: store.base, name: "b")
        #expect(try await b.tree().isEmpty)
        await a.shutdown()
        await b.shutdown()
    }

    static func state(_ device: TestDevice, _ path: String) async throws -> ContentState? {
        let ino = try #require(device.inode(path))
        return try await device.metadata.read { db in try ItemRow.find(ino: ino, db) }?.contentState
    }
}
