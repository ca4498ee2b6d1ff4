import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import Logging
import ItemModel
import MetadataStore
import SyncEngine
import Testing

/// Reads fetch what is read: a placeholder opened and read in part keeps only the blocks
/// read (a partial file), across a restart too; reading on completes it; eviction, pins,
/// writes and damaged blocks behave as for any file.
@Suite struct PartialReadTests {
    static func content(_ size: Int, seed: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 11) &+ seed) }
    }

    /// Device `a` writes these files; device `b` (state dir `stateDir`, or a new one) sees
    /// them as placeholders.
    func devices(_ files: [String: [UInt8]], store: any ContainerStore) async throws -> (a: TestDevice, b: TestDevice) {
        let a = try await TestDevice(store: store, name: "a")
        for (path, bytes) in files { try await a.write(path, bytes) }
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        return (a, b)
    }

    func state(_ device: TestDevice, _ ino: Inode) throws -> String {
        String(decoding: try device.core.getXattr(ino, name: Array("user.ubiqfs.state".utf8)), as: UTF8.self)
    }

    func read(_ device: TestDevice, _ ino: Inode, offset: Int64, size: Int) async throws -> [UInt8] {
        let handle = try await device.open(ino, flags: O_RDONLY)
        defer { device.core.release(handle: handle) }
        return try await device.core.read(handle: handle, size: size, offset: offset)
    }

    /// A reader's open and a download (a pin, a folder's readahead) both read the row as a
    /// placeholder, under shared leases, before either starts its fill: they share one
    /// fill, and the reader reads the blocks it fetched, never the holes of another file.
    @Test func twoCallersThatSawAPlaceholderShareOneFill() async throws {
        let bytes = Self.content(300 << 10, seed: 3)
        let (a, b) = try await devices(["doc.bin": bytes], store: InMemoryStore())
        let ino = try #require(b.inode("doc.bin"))
        let stale = try #require(try await b.metadata.read { db in try ItemRow.find(ino: ino, db) })
        #expect(stale.contentState == .placeholder)
        let first = try #require(try b.engine.downloads.partials.fill(for: stale))
        // The second caller read the row before the first fill began.
        let second = try #require(try b.engine.downloads.partials.fill(for: stale))
        #expect(first.generation == second.generation)
        // A reader opened now, while a download of the whole file runs.
        let handle = try await b.open(ino, flags: O_RDONLY)
        defer { b.core.release(handle: handle) }
        async let downloaded: Void = b.engine.downloads.materialize(ino)
        let read = try await b.core.read(handle: handle, size: bytes.count, offset: 0)
        try await downloaded
        #expect(read == bytes)
        #expect(try await b.core.read(handle: handle, size: bytes.count, offset: 0) == bytes)
        await a.shutdown()
        await b.shutdown()
    }

    /// What `file` and thumbnailers do: the first 64 KiB of many large placeholders fetch
    /// their first block each, a small fraction of the bytes.
    @Test func headsOfManyPlaceholdersFetchAFraction() async throws {
        let size = 8 << 20
        var files: [String: [UInt8]] = [:]
        for index in 0..<6 { files["video\(index).bin"] = Self.content(size, seed: index) }
        let (a, b) = try await devices(files, store: InMemoryStore())
        var here: Int64 = 0
        for (path, bytes) in files {
            let ino = try #require(b.inode(path))
            #expect(try await read(b, ino, offset: 0, size: 64 << 10) == Array(bytes[0..<(64 << 10)]))
            #expect(try state(b, ino) == "partial")
            here += try b.core.attributes(ino).blocks * 512
            #expect(try b.core.attributes(ino).size == Int64(size))
        }
        let total = Int64(files.count * size)
        #expect(here > 0 && here * 10 < total, "\(here) of \(total) bytes fetched for the heads")
        await a.shutdown()
        await b.shutdown()
    }

    /// Reading a partial file to the end completes it: local, every block here.
    @Test func readingOnCompletesTheFile() async throws {
        let bytes = Self.content(9 << 20, seed: 7)
        let (a, b) = try await devices(["f.bin": bytes], store: InMemoryStore())
        let ino = try #require(b.inode("f.bin"))
        #expect(try await read(b, ino, offset: 6 << 20, size: 4096) == Array(bytes[(6 << 20)..<(6 << 20) + 4096]))
        #expect(try state(b, ino) == "partial")
        #expect(try await b.readBytes("f.bin") == bytes)
        #expect(try await b.waitUntilLocal("f.bin"))
        #expect(try state(b, ino) == "local")
        #expect(try b.core.attributes(ino).blocks * 512 >= Int64(bytes.count))
        #expect(try await b.metadata.read { db in try FetchedBlocks.fill(of: ino, db) } == nil)
        await a.shutdown()
        await b.shutdown()
    }

    /// What was fetched survives a restart of the daemon, and only the rest is fetched
    /// after it (the first block is spoiled in the store: were it fetched again, it fails).
    @Test func fetchedBlocksSurviveARestart() async throws {
        let store = InMemoryStore()
        let bytes = Self.content(6 << 20, seed: 3)
        let (a, b) = try await devices(["f.bin": bytes], store: store)
        let ino = try #require(b.inode("f.bin"))
        _ = try await read(b, ino, offset: 0, size: 4096)
        // Recorded in the background, after an fdatasync.
        for _ in 0..<200 {
            let fill = try await b.metadata.read { db in try FetchedBlocks.fill(of: ino, db) }
            if fill?.bitmap.contains(where: { $0 != 0 }) == true { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let stateDir = b.stateDir
        await b.shutdown()
        let first = try #require(try await b.metadata.read { db in try ItemRow.find(ino: ino, db) }?.blockList.first)
        try await Self.spoil(first, in: store)
        let again = try await TestDevice(store: store, name: "b", stateDir: stateDir)
        #expect(try state(again, ino) == "partial")
        #expect(try again.core.attributes(ino).blocks * 512 >= first.length)
        #expect(try await again.readBytes("f.bin") == bytes)
        #expect(try await again.waitUntilLocal("f.bin"))
        await a.shutdown()
        await again.shutdown()
    }

    /// A damaged block fails the reads that need it (EIO, never zeros) and nothing else:
    /// the blocks around it are served.
    @Test func aDamagedBlockFailsOnlyItsReads() async throws {
        let store = InMemoryStore()
        let bytes = Self.content(6 << 20, seed: 5)
        let (a, b) = try await devices(["f.bin": bytes], store: store)
        let ino = try #require(b.inode("f.bin"))
        let blocks = try #require(try await b.metadata.read { db in try ItemRow.find(ino: ino, db) }?.blockList)
        try #require(blocks.count >= 3)
        try await Self.spoil(blocks[1], in: store)
        let inSecond = blocks[0].length + 10
        let error = await #expect(throws: FileSystemError.self) { _ = try await read(b, ino, offset: inSecond, size: 100) }
        #expect(error?.code == .io)
        #expect(try await read(b, ino, offset: 0, size: 100) == Array(bytes[0..<100]))
        let third = Int(blocks[0].length + blocks[1].length)
        #expect(try await read(b, ino, offset: Int64(third), size: 100) == Array(bytes[third..<third + 100]))
        #expect(try state(b, ino) == "error")
        await a.shutdown()
        await b.shutdown()
    }

    /// A program holds a placeholder open for writing (nothing fetched); another truncates
    /// it with O_TRUNC and writes: the first one's write lands in that file, not in the
    /// version it opened (which O_TRUNC replaced with a new cache file).
    @Test func aWriterThatOpenedBeforeAnOTruncWritesIntoTheTruncatedFile() async throws {
        let (a, b) = try await devices(["f.txt": Self.content(1 << 20, seed: 2)], store: InMemoryStore())
        let ino = try #require(b.inode("f.txt"))
        let first = try await b.open(ino, flags: O_RDWR)
        let second = try await b.open(ino, flags: O_WRONLY | O_TRUNC)
        _ = try await b.core.write(handle: second, bytes: Array("new".utf8), offset: 0)
        _ = try await b.core.write(handle: first, bytes: Array("x".utf8), offset: 3)
        b.core.release(handle: second)
        b.core.release(handle: first)
        #expect(try await b.read("f.txt") == "newx")
        await a.shutdown()
        await b.shutdown()
    }

    /// The cache budget evicts partial files like local ones, least recently used first,
    /// and never a pinned one.
    @Test func theCacheBudgetEvictsPartialFiles() async throws {
        let bytes = Self.content(3 << 20, seed: 11)
        let (a, b) = try await devices(["old.bin": bytes, "pinned.bin": bytes], store: InMemoryStore())
        let (old, pinned) = (try #require(b.inode("old.bin")), try #require(b.inode("pinned.bin")))
        try b.core.setXattr(pinned, name: Array("user.ubiqfs.pinned".utf8), value: [49], flags: 0)
        _ = try await read(b, old, offset: 0, size: 10)
        try await waitUntilLocal(b, pinned)
        #expect(try state(b, old) == "partial")
        let budget = CacheBudget(core: b.core, limit: 0, logger: Logger(label: "test"))
        #expect(budget.enforce() == 1)
        #expect(try state(b, old) == "placeholder")
        #expect(b.cache.status(old) == nil)
        #expect(try state(b, pinned) == "local")
        await a.shutdown()
        await b.shutdown()
    }

    /// A partial file is evicted like a local one (its cache file goes), a pin fetches the
    /// rest, and opening it for writing fetches nothing until the first write, which
    /// fetches it all.
    @Test func evictPinDownloadAndWriteAPartialFile() async throws {
        let bytes = Self.content(5 << 20, seed: 9)
        let (a, b) = try await devices(["e.bin": bytes, "p.bin": bytes, "w.bin": bytes], store: InMemoryStore())
        let (e, p, w) = (try #require(b.inode("e.bin")), try #require(b.inode("p.bin")), try #require(b.inode("w.bin")))
        for ino in [e, p, w] { _ = try await read(b, ino, offset: 0, size: 10) }
        try b.core.evict(e)
        #expect(try state(b, e) == "placeholder")
        #expect(try b.core.attributes(e).blocks == 0)
        #expect(b.cache.status(e) == nil)
        try b.core.setXattr(p, name: Array("user.ubiqfs.pinned".utf8), value: [49], flags: 0)
        try await waitUntilLocal(b, p)
        #expect(try state(b, p) == "local")
        // Opening for writing (`touch`) fetches nothing; the first write fetches the rest.
        let before = try b.core.attributes(w).blocks
        let handle = try await b.open(w, flags: O_RDWR)
        #expect(try b.core.attributes(w).blocks == before)
        #expect(try state(b, w) == "partial")
        _ = try await b.core.write(handle: handle, bytes: Array("changed".utf8), offset: 0)
        b.core.release(handle: handle)
        var expected = bytes
        expected.replaceSubrange(0..<7, with: Array("changed".utf8))
        #expect(try await b.readBytes("w.bin") == expected)
        try await b.sync()
        try await a.sync()
        #expect(try await a.readBytes("w.bin") == expected)
        await a.shutdown()
        await b.shutdown()
    }

    /// Zeroes a block's stored bytes where they are (its object, or its range of a pack):
    /// only this block no longer matches its name.
    static func spoil(_ block: BlockReference, in store: InMemoryStore) async throws {
        let (key, range) = ContainerLayout.location(of: block)
        var bytes = try await store.get(key)
        let spoiled = range.map { Int($0.lowerBound)..<Int($0.upperBound) } ?? bytes.indices
        bytes.replaceSubrange(spoiled, with: [UInt8](repeating: 0, count: spoiled.count))
        try await store.put(key, bytes)
    }

    /// Waits for a pinned file's download: a guard against a hang, not a speed claim (beside
    /// stress-ng and a dozen other tests, 4 seconds were not always enough for 3 MiB).
    func waitUntilLocal(_ device: TestDevice, _ ino: Inode) async throws {
        for _ in 0..<3000 where try state(device, ino) != "local" { try await Task.sleep(for: .milliseconds(20)) }
    }
}
