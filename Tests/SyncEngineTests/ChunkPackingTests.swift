import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// A large file's new blocks go into packs of about 8 MiB, one `PUT` each with no question
/// asked first, and a block the store has already, in whichever file, is named where it
/// is (`ChunkIndex`): a copy sends nothing. The index is a hint the push checks (rule W3).
@Suite struct ChunkPackingTests {
    typealias CountingStore = ChunkedUploadTests.CountingStore

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: count, by: 8) {
                withUnsafeBytes(of: rng.next()) { word in
                    for offset in 0..<min(8, count - index) { raw[index + offset] = word[offset] }
                }
            }
        }
        return bytes
    }

    /// A file's committed blocks.
    static func blocks(_ device: TestDevice, _ path: String) async throws -> [BlockReference] {
        let ino = try #require(device.inode(path))
        let id = try #require(try await device.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID
        return try #require(try await device.metadata.read { db in try BaseSnapshots.find(id, db) }?.blocks)
    }

    /// The objects a file's committed blocks name.
    static func objects(_ device: TestDevice, _ path: String) async throws -> Set<String> {
        Set(try await blocks(device, path).compactMap(ContainerLayout.objectKey(of:)))
    }

    /// 24 MiB of random bytes, about 24 blocks, go as three packs (a `PUT` each, nothing
    /// asked first), no block object; another device reads them exactly.
    @Test func aLargeFileGoesIntoPacksOfAboutEightMiB() async throws {
        let base = InMemoryStore()
        let store = CountingStore(base: base)
        let a = try await TestDevice(store: store, name: "a")
        let bytes = Self.random(24 << 20, seed: 44)
        try await a.write("big.bin", bytes)
        try await a.sync()
        let counts = store.counts.withLock { $0 }
        let blocks = try await ChunkedUploadTests.lengths(a, "big.bin").count
        #expect(blocks >= 16, "the control: \(blocks) blocks")
        #expect(counts.puts == 3 && counts.exists == 0 && counts.bytes == bytes.count, "\(blocks) blocks: \(counts)")
        #expect(try await Self.objects(a, "big.bin").count == 3)
        #expect(base.count(under: ContainerLayout.blockPrefix) == 0)
        let b = try await TestDevice(store: base, name: "b")
        #expect(try await b.readBytes("big.bin") == bytes)
        for device in [a, b] { await device.shutdown() }
    }

    /// Another device's copy of a large file, in another folder, puts nothing: its blocks
    /// are named where the first device put them, and each of their packs is asked about
    /// once (W3). A file of the same size with other bytes (the control) puts all of it.
    @Test func aCopyOfALargeFileSendsNoBlock() async throws {
        let base = InMemoryStore()
        let store = CountingStore(base: base)
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        let bytes = Self.random(12 << 20, seed: 45)
        try await a.write("big.bin", bytes)
        try await a.sync()
        try await b.sync()
        let packs = try await Self.objects(a, "big.bin")

        store.reset()
        try b.mkdir("copies")
        try await b.write("copies/big copy.bin", bytes)
        try await b.sync()
        let copy = store.counts.withLock { $0 }
        #expect(copy.bytes == 0 && copy.puts == 0 && copy.exists == packs.count, "\(copy)")
        #expect(try await Self.objects(b, "copies/big copy.bin") == packs)

        store.reset()
        try await b.write("other.bin", Self.random(12 << 20, seed: 46))
        try await b.sync()
        #expect(store.counts.withLock { $0 }.bytes == 12 << 20, "the control")

        let c = try await TestDevice(store: base, name: "c")
        #expect(try await c.readBytes("copies/big copy.bin") == bytes)
        for device in [a, b, c] { await device.shutdown() }
    }

    /// The index is a hint: objects it names that are gone from the store (deleted behind
    /// the device's back) are found missing by the push, forgotten, and the copy's bytes are
    /// sent again; a new device reads the copy exactly.
    @Test func aCopyWhoseIndexedBlocksAreGoneSendsThemAgain() async throws {
        let base = InMemoryStore()
        let store = CountingStore(base: base)
        let a = try await TestDevice(store: store, name: "a")
        let bytes = Self.random(12 << 20, seed: 47)
        try await a.write("big.bin", bytes)
        try await a.sync()
        let packs = try await Self.objects(a, "big.bin")
        for key in packs { try await base.delete(key) }

        store.reset()
        try await a.write("copy.bin", bytes)
        try await a.sync()
        let counts = store.counts.withLock { $0 }
        // The index named the packs: the push asked about them (W3) before sending again.
        #expect(counts.bytes == bytes.count && counts.exists >= 1, "\(counts)")
        let copied = try await Self.objects(a, "copy.bin")
        #expect(copied.isDisjoint(with: packs) && !copied.isEmpty)
        let first = try #require(try await Self.blocks(a, "copy.bin").first)
        let indexed = try await a.metadata.read { db in try ChunkIndex.find(first.hash, length: first.length, db) }
        #expect(indexed.flatMap(ContainerLayout.objectKey(of:)).map(copied.contains) == true, "the index names the new place")

        let c = try await TestDevice(store: base, name: "c")
        #expect(try await c.readBytes("copy.bin") == bytes)
        for device in [a, c] { await device.shutdown() }
    }

    /// A format-1 container has no packs (its readers know none): a large file's blocks
    /// are objects of their own there, each put once, and a copy puts none again.
    @Test func aFormatOneContainerKeepsBlockObjects() async throws {
        let base = InMemoryStore()
        let a = try await TestDevice(store: base, name: "a", configuration: PackTests.formatOne)
        let bytes = Self.random(6 << 20, seed: 48)
        try await a.write("big.bin", bytes)
        try await a.write("copy.bin", bytes)
        try await a.sync()
        let blocks = try await Self.blocks(a, "big.bin")
        #expect(blocks.allSatisfy { $0.pack == nil } && blocks.count > 3)
        #expect(base.count(under: ContainerLayout.packPrefix) == 0 && base.count(under: ContainerLayout.blockPrefix) == Set(blocks.map(\.hash)).count)
        let b = try await TestDevice(store: base, name: "b", configuration: PackTests.formatOne)
        #expect(try await b.readBytes("copy.bin") == bytes)
        for device in [a, b] { await device.shutdown() }
    }

    /// A large file read cold comes back in runs of its packed chunks, one ranged `GET` of
    /// up to a pack each, read whole at once or piece by piece as `cat` reads (the readahead
    /// asks for many chunks at a time); a chunk fetched alone is one `GET` (the control:
    /// the file has more chunks than either read makes requests).
    @Test func aLargeFileReadColdComesBackInRunsOfItsPacks() async throws {
        let base = InMemoryStore()
        let a = try await TestDevice(store: base, name: "a")
        let bytes = Self.random(32 << 20, seed: 49)
        try await a.write("big.bin", bytes)
        try await a.sync()
        let chunks = try await Self.blocks(a, "big.bin").count
        #expect(chunks >= 24, "the control: \(chunks) chunks")

        let whole = CountingStore(base: base)
        let b = try await TestDevice(store: whole, name: "b")
        #expect(try await b.readBytes("big.bin") == bytes)
        let wholeGets = whole.gets.withLock { $0 }
        #expect(wholeGets <= chunks / 2, "read whole: \(wholeGets) GETs for \(chunks) chunks")

        let pieces = CountingStore(base: base)
        let c = try await TestDevice(store: pieces, name: "c")
        let ino = try #require(c.inode("big.bin"))
        let handle = try await c.open(ino, flags: O_RDONLY)
        var read: [UInt8] = []
        while read.count < bytes.count {
            read += try await c.core.read(handle: handle, size: 128 << 10, offset: Int64(read.count))
        }
        c.core.release(handle: handle)
        #expect(read == bytes)
        let pieceGets = pieces.gets.withLock { $0 }
        #expect(pieceGets <= chunks * 2 / 3, "read as cat does: \(pieceGets) GETs for \(chunks) chunks")
        print("ChunkPackingTests: 32 MiB in \(chunks) chunks read cold with \(wholeGets) GETs whole, \(pieceGets) piece by piece")
        for device in [a, b, c] { await device.shutdown() }
    }
}
