import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import SyncEngine
import Testing

/// Opening, reading and truncating placeholders, through the core as the kernel would:
/// the core waits for what it needs itself (the whole content for writing, only the
/// blocks a read covers while a download streams), outside any lease, and a wait ends
/// with a clear error (offline, stalled, corrupt, Ctrl-C), never with zeros.
@Suite struct PlaceholderTests {
    /// Text past the inline limit (1 KiB): a placeholder of it is fetched, not carried in its record.
    static func fetched(_ text: String) -> String { String(repeating: text + " ", count: 1 + 1024 / (text.utf8.count + 1)) }

    /// A second device, synced, with `remote.txt` a placeholder of `content`.
    func placeholder(_ content: [UInt8], on store: any ContainerStore, configuration: SyncConfiguration = SyncConfiguration()) async throws -> (a: TestDevice, b: TestDevice, ino: Inode) {
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("remote.txt", content)
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b", configuration: configuration)
        try await b.sync()
        let ino = try #require(b.inode("remote.txt"))
        #expect(try b.core.attributes(ino).blocks == 0)
        return (a, b, ino)
    }

    /// Opening for reading answers at once and fetches nothing; each read waits for its
    /// own blocks, and a read whose wait is cancelled (Ctrl-C) says so.
    @Test func aPlaceholderOpensForReadingWithoutFetching() async throws {
        let faulty = FaultyStore(InMemoryStore(), faults: StoreFaults())
        var configuration = SyncConfiguration()
        configuration.storeTimeout = .seconds(2)
        let content = Array(Self.fetched("streamed, not waited for").utf8)
        let (a, b, ino) = try await placeholder(content, on: faulty, configuration: configuration)
        faulty.faults = try StoreFaults(parsing: "hang,blocks")
        let handle = try await b.core.open(ino, flags: O_RDONLY).handle
        #expect(b.engine.transfers.transfer(ino) == nil)
        #expect(try b.core.attributes(ino).blocks == 0)
        let reader = Task { try await b.core.read(handle: handle, size: content.count, offset: 0) }
        try await Task.sleep(for: .milliseconds(100))
        reader.cancel()
        let interrupted = await #expect(throws: FileSystemError.self) { try await reader.value }
        #expect(interrupted?.code == .interrupted)
        // The block request times out: the download failed, and its holes are never zeros.
        let failed = await #expect(throws: FileSystemError.self) { try await b.core.read(handle: handle, size: content.count, offset: 0) }
        #expect(failed?.code == .unreachable)
        b.core.release(handle: handle)
        faulty.faults = StoreFaults()
        #expect(try await b.readBytes("remote.txt") == content)
        await a.shutdown()
        await b.shutdown()
    }

    /// A read in the middle of a large placeholder is served while the rest downloads.
    @Test func aReadInTheMiddleGetsItsBytesWhileTheRestDownloads() async throws {
        let content: [UInt8] = (0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 12)) }
        let faulty = FaultyStore(InMemoryStore(), faults: StoreFaults())
        let (a, b, ino) = try await placeholder(content, on: faulty)
        faulty.faults = try StoreFaults(parsing: "latency=50ms,blocks")
        let handle = try await b.core.open(ino, flags: O_RDONLY).handle
        let offset: Int64 = 7 << 20
        let middle = try await b.core.read(handle: handle, size: 4096, offset: offset)
        #expect(middle == Array(content[Int(offset)..<Int(offset) + 4096]))
        b.core.release(handle: handle)
        #expect(try await b.readBytes("remote.txt") == content)
        await a.shutdown()
        await b.shutdown()
    }

    /// Truncating a placeholder to a size other than zero downloads it first; the result
    /// is pushed like any edit.
    @Test func truncatingAPlaceholderFetchesItsContentFirst() async throws {
        let (a, b, ino) = try await placeholder(Array("0123456789".utf8), on: InMemoryStore())
        let attributes = try await b.core.setAttributes(ino, AttributeChanges(size: 4), handle: nil)
        #expect(attributes.size == 4)
        #expect(try await b.read("remote.txt") == "0123")
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("remote.txt") == "0123")
        await a.shutdown()
        await b.shutdown()
    }

    /// An empty placeholder has nothing to fetch: growing it makes it local at once (it
    /// failed with EIO, "keeps changing", waiting for a download that had nothing to do).
    @Test func growingAnEmptyPlaceholderNeedsNoDownload() async throws {
        let (a, b, remote) = try await placeholder([], on: InMemoryStore())
        try await a.write("evicted", "")
        try await a.sync()
        let evicted = try #require(a.inode("evicted"))
        try a.core.evict(evicted)
        for (device, ino, path) in [(a, evicted, "evicted"), (b, remote, "remote.txt")] {
            let attributes = try await device.core.setAttributes(ino, AttributeChanges(size: 50), handle: nil)
            #expect(attributes.size == 50)
            #expect(try await device.readBytes(path) == [UInt8](repeating: 0, count: 50))
        }
        try await a.sync()
        try await b.sync()
        try await a.sync()
        #expect(try await a.readBytes("remote.txt").count == 50)
        #expect(try await b.readBytes("evicted").count == 50)
        await a.shutdown()
        await b.shutdown()
    }

    /// An empty placeholder opened (for reading, or truncated to what it is) becomes local
    /// with the time every device shows: no change, nothing pushed.
    @Test func anEmptyPlaceholderOpenedKeepsItsTime() async throws {
        let store = InMemoryStore()
        let (a, b, ino) = try await placeholder([], on: store)
        let committed = try a.core.attributes(try #require(a.inode("remote.txt"))).mtime
        try await Task.sleep(for: .milliseconds(20))
        for flags in [O_RDONLY, O_WRONLY | O_TRUNC] {
            b.core.release(handle: try await b.core.open(ino, flags: flags).handle)
            #expect(try b.core.attributes(ino).mtime == committed, "flags \(flags)")
        }
        #expect(await b.engine.status().pendingItems == 0)
        await a.shutdown()
        await b.shutdown()
    }

    /// O_TRUNC needs none of the old content: it opens with the store away.
    @Test func openingAPlaceholderWithTruncateFetchesNothing() async throws {
        let store = InMemoryStore()
        let (a, b, ino) = try await placeholder(Array("old content".utf8), on: store)
        store.isReachable = false
        let handle = try await b.core.open(ino, flags: O_WRONLY | O_TRUNC).handle
        _ = try Array("new".utf8).withUnsafeBytes { try b.core.write(handle: handle, data: $0, offset: 0) }
        b.core.release(handle: handle)
        #expect(try await b.read("remote.txt") == "new")
        store.isReachable = true
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("remote.txt") == "new")
        await a.shutdown()
        await b.shutdown()
    }

    /// Offline, a placeholder opens (nothing is fetched at open) and its reads fail as
    /// unreachable, never with zeros.
    @Test func aPlaceholderReadOfflineFailsAsUnreachable() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("remote.txt", Self.fetched("only in the store"))
        try await a.sync()
        try await b.sync()
        store.isReachable = false
        await #expect(throws: SyncError.self) { try await b.sync() }
        let ino = try #require(b.inode("remote.txt"))
        let handle = try await b.core.open(ino, flags: O_RDONLY).handle
        let failed = await #expect(throws: FileSystemError.self) { try await b.core.read(handle: handle, size: 100, offset: 0) }
        #expect(failed?.code == .unreachable)
        b.core.release(handle: handle)
        // Local work goes on meanwhile.
        try await b.write("local.txt", "written offline")
        #expect(try await b.read("local.txt") == "written offline")
        store.isReachable = true
        try await b.sync()
        #expect(try await b.read("remote.txt") == Self.fetched("only in the store"))
        await a.shutdown()
        await b.shutdown()
    }

    /// A stalled store: sync and placeholders fail after the time limit instead of hanging,
    /// local files keep working, and all is well once the store answers again.
    @Test func aStalledStoreTimesOutWhileLocalFilesKeepWorking() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("remote.txt", Self.fetched("from a"))
        try await a.sync()
        var configuration = SyncConfiguration()
        configuration.storeTimeout = .milliseconds(200)
        let faulty = FaultyStore(store, faults: StoreFaults())
        let b = try await TestDevice(store: faulty, name: "b", configuration: configuration)
        faulty.faults = try StoreFaults(parsing: "hang")
        let started = ContinuousClock.now
        await #expect(throws: SyncError.self) { try await b.sync() }
        #expect(await b.engine.status().state == "offline")
        let ino = try #require(b.inode("remote.txt"))
        // Opening fetches nothing; the first write needs the content and times out.
        let handle = try await b.core.open(ino, flags: O_RDWR).handle
        let failed = await #expect(throws: FileSystemError.self) { try await b.core.write(handle: handle, bytes: [1], offset: 0) }
        #expect(failed?.code == .unreachable)
        b.core.release(handle: handle)
        #expect(ContinuousClock.now - started < .seconds(30))
        try await b.write("local.txt", "still works")
        #expect(try await b.read("local.txt") == "still works")
        faulty.faults = StoreFaults()
        try await b.sync()
        #expect(try await b.read("remote.txt") == Self.fetched("from a"))
        try await a.sync()
        #expect(try await a.read("local.txt") == "still works")
        await a.shutdown()
        await b.shutdown()
    }

    @Test func corruptBlocksAreNeverServed() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("data.bin", Self.fetched("good content"))
        try await a.sync()
        for key in store.keys where key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix) {
            try await store.put(key, Array(Self.fetched("evil content").utf8))
        }
        let b = try await TestDevice(store: store, name: "b")
        try await b.sync()
        // The program gets EIO; the cause says why.
        let error = await #expect(throws: FileSystemError.self) { _ = try await b.read("data.bin") }
        #expect(error?.code == .io)
        #expect((error?.cause as? SyncError)?.code == .corrupt)
        await a.shutdown()
        await b.shutdown()
    }
}
