import ContainerStore
import ContentChunking
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import Synchronization
@testable import SyncEngine
import Testing

/// Files are stored as `BlockCutting` cuts them (issue 41): the leading blocks, then
/// content-defined chunks. A file streamed from disk is cut as the same bytes held whole,
/// every size reads back exactly on another device, and an edit (a line inserted at the
/// start, a page rewritten in place) sends only the blocks around it; the committed
/// version's blocks go with no request at all.
@Suite struct ChunkedUploadTests {
    /// A store that counts the bytes put under `blocks/` and `packs/`, the `exists` asked,
    /// and the `GET`s of content.
    final class CountingStore: ForwardingStore, Sendable {
        let base: any ContainerStore
        let counts = Mutex((bytes: 0, puts: 0, exists: 0))
        let gets = Mutex(0)

        func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
            if key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix) { gets.withLock { $0 += 1 } }
            return try await base.get(key, range: range)
        }

        init(base: any ContainerStore) { self.base = base }

        func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
            if key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix) {
                counts.withLock { $0 = (bytes: $0.bytes + bytes.count, puts: $0.puts + 1, exists: $0.exists) }
            }
            try await base.put(key, bytes)
        }

        func exists(_ key: String) async throws(StoreError) -> Bool {
            counts.withLock { $0.exists += 1 }
            return try await base.exists(key)
        }

        func reset() { counts.withLock { $0 = (0, 0, 0) } }
    }

    static func lengths(_ device: TestDevice, _ path: String) async throws -> [Int] {
        let ino = try #require(device.inode(path))
        let id = try #require(try await device.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID
        return try #require(try await device.metadata.read { db in try BaseSnapshots.find(id, db) }).blocks?.map { Int($0.length) } ?? []
    }

    static func ends(_ lengths: [Int]) -> [Int] {
        lengths.reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1) }
    }

    /// Sizes around each bound (the leading blocks, the chunker's minimum and maximum), text
    /// and random: cut from disk as held whole, and read back exactly by a new device.
    @Test func everySizeIsCutAsHeldWholeAndReadsBack() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let cutting = try BlockCutting(info: ContainerInfo(id: "x", created: 0), cipher: nil)
        #expect(cutting.chunking.average == 1 << 20 && cutting.chunking.maximum == 4 << 20)
        var rng = SplitMix64(seed: 41)
        let sizes = [0, 1, (256 << 10) - 1, 256 << 10, (256 << 10) + 1, 1 << 20, (1 << 20) + 1, (5 << 20) + 4097, 13 << 20]
        var files: [String: [UInt8]] = [:]
        for (index, size) in sizes.enumerated() {
            let bytes = index % 2 == 0 ? (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) } : Self.text(size, &rng)
            files["f\(index)"] = bytes
            try await a.write("f\(index)", bytes)
        }
        try await a.sync()
        for (path, bytes) in files where bytes.count > 256 << 10 {
            #expect(Self.ends(try await Self.lengths(a, path)) == cutting.cuts(of: bytes), "\(path): \(bytes.count) bytes")
        }
        let b = try await TestDevice(store: store, name: "b")
        for (path, bytes) in files { #expect(try await b.readBytes(path) == bytes, "\(path)") }
        #expect(try await Self.lengths(a, "f8").count > 8, "13 MiB in chunks of about 1 MiB")
        for device in [a, b] { await device.shutdown() }
    }

    /// Lines of words, as a log or source file.
    static func text(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            for _ in 0..<(1 + rng.below(12)) { bytes += (0..<(1 + rng.below(8))).map { _ in UInt8(97 + rng.below(26)) } + [32] }
            bytes.append(10)
        }
        return Array(bytes.prefix(count))
    }

    /// A line inserted at the start of 24 MiB of text, then a 4 KiB page rewritten in the
    /// middle: each edit puts a few MiB at most; the unchanged blocks are neither put nor
    /// asked about. The first upload of the file (the control) puts all of it.
    @Test func editsSendOnlyTheBlocksAroundThem() async throws {
        let store = CountingStore(base: InMemoryStore())
        let a = try await TestDevice(store: store, name: "a")
        var rng = SplitMix64(seed: 42)
        let original = Self.text(24 << 20, &rng)
        try await a.write("log.txt", original)
        try await a.sync()
        let first = store.counts.withLock { $0 }
        #expect(first.bytes >= original.count, "the control: \(first)")

        store.reset()
        let inserted = Array("a new first line\n".utf8) + original
        try await a.write("log.txt", inserted)
        try await a.sync()
        let insert = store.counts.withLock { $0 }
        #expect(insert.bytes < 6 << 20, "a line inserted at the start put \(insert.bytes) bytes")
        #expect(insert.exists <= insert.puts + 1, "\(insert)")

        store.reset()
        var page = inserted
        let at = 12 << 20
        for index in at..<(at + 4096) { page[index] = UInt8(65 + index % 26) }
        try await a.write("log.txt", page)
        try await a.sync()
        let rewrite = store.counts.withLock { $0 }
        #expect(rewrite.bytes <= 8 << 20 && rewrite.puts <= 2 && rewrite.exists <= 2, "a page rewritten: \(rewrite)")

        let b = try await TestDevice(store: store.base, name: "b")
        #expect(try await b.readBytes("log.txt") == page)
        let versions = try a.core.versions(try #require(a.inode("log.txt"))).versions
        #expect(versions.count == 3)
        print("ChunkedUploadTests: 24 MiB of text; first upload \(first.bytes) bytes, a line at the start \(insert.bytes), a 4 KiB page \(rewrite.bytes)")
        for device in [a, b] { await device.shutdown() }
    }

    /// In an encrypted container the chunker's table is keyed: the same content is cut
    /// elsewhere than in a plain one (whose cuts anyone can compute), and reads back.
    @Test func anEncryptedContainerCutsWhereOnlyItsKeySays() async throws {
        var rng = SplitMix64(seed: 43)
        let bytes = Self.text(12 << 20, &rng)
        var lengths: [[Int]] = []
        for encrypt in [false, true] {
            let store = InMemoryStore()
            let a = try await TestDevice(store: store, name: "a", configuration: EncryptionTests.configuration(encrypt: encrypt))
            try await a.write("notes.txt", bytes)
            try await a.sync()
            lengths.append(try await Self.lengths(a, "notes.txt"))
            let b = try await TestDevice(store: store, name: "b", configuration: EncryptionTests.configuration())
            #expect(try await b.readBytes("notes.txt") == bytes)
            for device in [a, b] { await device.shutdown() }
        }
        let plain = try BlockCutting(info: ContainerInfo(id: "x", created: 0), cipher: nil)
        #expect(Self.ends(lengths[0]) == plain.cuts(of: bytes))
        #expect(lengths[0].prefix(2) == lengths[1].prefix(2) && lengths[0] != lengths[1], "\(lengths)")
    }
}
