import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import MetadataStore
import SeaweedFSFixture
import SyncEngine
import Synchronization
import Testing

/// File versions and restore, the watch API's events, and what a
/// reader gets while the store is away: several devices on one store, no FUSE.
@Suite struct VersionAndWatchTests {
    @Test func versionsSurviveSafeSavesAndRestoreIsANewVersion() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("doc.txt", "one")
        try await a.sync()
        // A safe save: write a new file, rename it over the original.
        try await a.write("doc.txt.tmp", "two")
        try a.rename("doc.txt.tmp", "doc.txt")
        try await a.sync()
        try await b.sync()
        try await b.write("doc.txt", "three from b")
        try a.core.setXattr(try #require(a.inode("doc.txt")), name: Array("user.note".utf8), value: [49], flags: 0)
        try await b.sync()
        try await a.sync()
        try await b.sync()
        let inoB = try #require(b.inode("doc.txt"))
        let (versions, current) = try b.core.versions(inoB)
        // The metadata-only commit (an xattr) is not a version.
        #expect(versions.map(\.size) == [12, 3, 3])
        #expect(versions.map(\.device) == ["b", "a", "a"])
        #expect(current == versions.first?.seq)
        #expect(try a.core.versions(try #require(a.inode("doc.txt"))).versions == versions)

        try await b.core.restore(inoB, version: versions[2].seq)
        #expect(try await b.read("doc.txt") == "one")
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("doc.txt") == "one")
        let after = try a.core.versions(try #require(a.inode("doc.txt")))
        #expect(after.versions.count == 4)
        #expect(after.current == after.versions.first?.seq)
        await #expect(throws: FileSystemError.self) { try await b.core.restore(inoB, version: 999) }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func restoreWaitsForNoWriter() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("log.txt", "v1")
        try await a.sync()
        try await a.write("log.txt", "v2")
        try await a.sync()
        let ino = try #require(a.inode("log.txt"))
        let writer = try await a.open(ino, flags: O_RDWR)
        let first = try #require(try a.core.versions(ino).versions.last)
        do {
            try await a.core.restore(ino, version: first.seq)
            Issue.record("restore replaced a file open for writing")
        } catch {
            #expect(error.code == .busy)
        }
        a.core.release(handle: writer)
        try await a.core.restore(ino, version: first.seq)
        #expect(try await a.read("log.txt") == "v1")
        await a.shutdown()
    }

    @Test func watchersSeeLocalAndRemoteChanges() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        let seen = Mutex<[ChangeEvent]>([])
        let subscription = b.engine.feed.subscribe { event in seen.withLock { $0.append(event) } }
        try a.mkdir("docs")
        try await a.write("docs/a.txt", "hello")
        try await a.write("gone.txt", "soon deleted")
        try await a.sync()
        try await b.sync()
        try a.rename("docs/a.txt", "docs/b.txt")
        try a.remove("gone.txt")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("docs/b.txt") == "hello")
        // Read through: local once its blocks are on disk (in the background), then told.
        #expect(try await b.waitUntilLocal("docs/b.txt"))
        for _ in 0..<500 where !seen.withLock({ $0.contains { $0.event == .downloaded } }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await b.write("local.txt", "here")
        try await b.sync()
        b.engine.feed.unsubscribe(subscription)
        try await b.write("unwatched.txt", "nobody listens")

        // Within one commit the order follows the push plan (deletes first, folders before
        // their contents); across commits it is the order of the journal.
        let events = seen.withLock { $0 }.map { "\($0.origin.rawValue) \($0.event.rawValue) \($0.from.map { $0 + " -> " } ?? "")\($0.path)" }
        #expect(events.count == 9)
        #expect(Set(events.prefix(3)) == ["remote created /docs", "remote created /docs/a.txt", "remote created /gone.txt"])
        #expect(Set(events.dropFirst(3).prefix(2)) == ["remote moved /docs/a.txt -> /docs/b.txt", "remote deleted /gone.txt"])
        #expect(Array(events.dropFirst(5)) == [
            "remote downloaded /docs/b.txt",
            "local created /local.txt",
            "local modified /local.txt",
            "local uploaded /local.txt",
        ])
        #expect(ChangeEvent(.moved, path: "/x/y", from: "/docs/a", origin: .local).concerns("/docs"))
        #expect(!ChangeEvent(.created, path: "/docs2/a", origin: .local).concerns("/docs"))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aNewDeviceJoinsA100kItemContainerFromItsCheckpoint() async throws {
        let store = InMemoryStore()
        // The checkpoint a long-lived container would have: 100 folders of 1000 files.
        let seq: UInt64 = 5000
        // Built and encoded on a thread: seconds of CPU in a debug build, which would starve
        // the cooperative pool that the other suites share.
        let checkpoint = try await offThread { () throws -> [UInt8] in
            var items: [ItemSnapshot] = []
            for folder in 0..<100 {
                let folderID = ItemID.random()
                items.append(ItemSnapshot(id: folderID, parent: .root, name: ByteString("folder \(folder)"), kind: .directory, mode: 0o755, mtime: 1, size: 0))
                for file in 0..<1000 {
                    items.append(ItemSnapshot(
                        id: .random(), parent: folderID, name: ByteString("file \(file).txt"), kind: .file, mode: 0o644,
                        mtime: 1_700_000_000_000_000_000, size: 0, blocks: []
                    ))
                }
            }
            return try RecordCodec.encode(Checkpoint(seq: seq, items: items))
        }
        #expect(try await store.putIfAbsent(ContainerLayout.checkpointKey(seq), checkpoint))
        // Records 1...5000 are gone (or would take minutes); only what follows is replayed.
        let record = JournalRecord(device: "other", deviceName: "other", commit: "c", time: Timestamp.now(), ops: [
            .upsert(ItemSnapshot(id: .random(), parent: .root, name: ByteString("late.txt"), kind: .file, mode: 0o644, mtime: 1, size: 0, blocks: [])),
        ])
        #expect(try await store.putIfAbsent(ContainerLayout.journalKey(seq + 1), RecordCodec.encode(record)))
        let started = ContinuousClock.now
        let b = try await TestDevice(store: store, name: "b")
        let elapsed = ContinuousClock.now - started
        print("joined a 100k-item container in \(elapsed)")
        let count = try await b.metadata.read { db in try ItemRow.fetchCount(db) }
        #expect(count == 1 + 100_100 + 1)
        #expect(b.inode("folder 99/file 999.txt") != nil)
        #expect(b.inode("late.txt") != nil)
        await b.shutdown()
    }
}
