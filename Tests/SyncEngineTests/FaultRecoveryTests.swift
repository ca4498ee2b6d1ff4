import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import Logging
import MetadataStore
import Testing

/// Store faults a device must survive without losing or doubling anything.
@Suite struct FaultRecoveryTests {
    /// Deleting frees disk space at once, even while the delete waits for the store.
    @Test func aDeleteFreesItsContentBeforeItIsPushed() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let device = try await TestDevice(store: link, name: "a")
        try await device.write("big.bin", [UInt8](repeating: 7, count: 1 << 20))
        try await device.write("new.bin", [UInt8](repeating: 8, count: 1 << 20))
        try await device.sync()
        link.faults = try StoreFaults(parsing: "errors=1")
        try await device.write("draft.bin", [UInt8](repeating: 9, count: 1 << 20))
        let inodes = [try #require(device.inode("big.bin")), try #require(device.inode("draft.bin"))]
        try device.remove("big.bin")
        try device.remove("draft.bin")
        // The kernel forgets unlinked inodes; this test's lookups stand in for its own.
        for ino in inodes { device.core.forget(ino, count: .max) }
        // Once the deletes are on disk: the engine syncs the database for them on its own.
        let deadline = ContinuousClock.now + .seconds(60)
        while inodes.contains(where: { device.cache.status($0) != nil }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        for ino in inodes { #expect(device.cache.status(ino) == nil) }
        #expect(device.core.cacheBytes() < 1 << 21)

        // The deletes still reach the store, and a restart finds nothing "lost".
        link.faults = StoreFaults()
        try await device.sync()
        let other = try await TestDevice(store: store, name: "b")
        #expect(try await other.tree() == ["new.bin": String(repeating: "\u{8}", count: 1 << 20)])
        await device.shutdown()
        await other.shutdown()
    }

    /// Writes reach the store but every reply is lost: the device must recognise its own
    /// commit when it reads it back, and neither commit it twice nor see a conflict.
    @Test func aCommitWhoseReplyWasLostIsNotAppliedTwice() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        link.faults = try StoreFaults(parsing: "lost=1")
        try a.mkdir("folder")
        try await a.write("folder/doc.txt", "written once")
        // Blocks first (already there the next time), then the record: each attempt "fails".
        try await Self.syncUntilTheRecordLands(a, in: store)
        #expect(try await Self.records(in: store) == 1)

        link.faults = StoreFaults()
        try await a.sync()
        try await a.sync()
        try await b.sync()

        #expect(try await Self.records(in: store) == 1)
        let expected = ["folder": "/", "folder/doc.txt": "written once"]
        #expect(try await a.tree() == expected)
        #expect(try await b.tree() == expected)

        // Every later reply lost too, on a mix of changes: still one record per commit.
        link.faults = try StoreFaults(parsing: "lost=0.5,seed=3")
        for round in 0..<6 {
            try await a.write("folder/doc.txt", "round \(round)")
            try a.rename("folder/doc.txt", "folder/doc-\(round).txt")
            try a.rename("folder/doc-\(round).txt", "folder/doc.txt")
            _ = try? await a.sync()
        }
        link.faults = StoreFaults()
        try await a.sync()
        try await b.sync()
        #expect(try await a.tree() == ["folder": "/", "folder/doc.txt": "round 5"])
        #expect(try await b.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
    }

    /// The same after a crash: the pending commit was written down before the store call.
    @Test func aLostReplyIsSettledAfterARestart() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        link.faults = try StoreFaults(parsing: "lost=1")
        try await a.write("doc.txt", "once")
        try await Self.syncUntilTheRecordLands(a, in: store)
        // Stopped before any pull could tell (as by a crash).
        link.faults = try StoreFaults(parsing: "errors=1")
        await a.shutdown()

        let restarted = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        try await restarted.sync()
        #expect(try await Self.records(in: store) == 1)
        #expect(try await restarted.tree() == ["doc.txt": "once"])
        await restarted.shutdown()
    }

    /// A file still being written is renamed and its name taken (a rotated log): the rename
    /// goes with its committed content, and that record's reply is lost. Settled after a
    /// restart, the file's newer content is still pending, and pushed.
    @Test func aLostRenameOfAFileBeingWrittenLeavesItsContentPendingAfterARestart() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("log", "old\n")
        try await a.sync()
        let ino = try #require(a.inode("log"))
        let writer = try await a.open(ino, flags: O_WRONLY)
        _ = try Array("more\n".utf8).withUnsafeBytes { try a.core.write(handle: writer, data: $0, offset: 4) }
        try a.rename("log", "log.1")
        try await a.write("log", "new\n")
        link.faults = try StoreFaults(parsing: "lost=1")
        for _ in 0..<5 where try await Self.records(in: store) == 1 {
            await #expect(throws: (any Error).self) { try await a.sync() }
        }
        #expect(try await Self.records(in: store) == 2)
        link.faults = try StoreFaults(parsing: "errors=1")
        await a.shutdown()

        let restarted = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        try await restarted.sync()
        try await b.sync()
        #expect(try await b.tree() == ["log": "new\n", "log.1": "old\nmore\n"])
        #expect(await restarted.engine.status().pendingItems == 0)
        await restarted.shutdown()
        await b.shutdown()
    }

    /// A restart frees the content of deletes still waiting for the store, and says nothing is lost.
    @Test func aRestartFreesTheContentOfUnpushedDeletes() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        try await a.write("big.bin", [UInt8](repeating: 7, count: 1 << 20))
        try await a.sync()
        link.faults = try StoreFaults(parsing: "errors=1")
        let ino = try #require(a.inode("big.bin"))
        // Still looked up (no forget), as when the daemon stops with the kernel holding it.
        try a.remove("big.bin")
        #expect(a.cache.status(ino) != nil)
        await a.shutdown()
        // What a restart does first, before any store call.
        try StateReconciler.reconcile(metadata: a.metadata, cache: a.cache, logger: Logger(label: "test"))
        #expect(a.cache.status(ino) == nil)

        let restarted = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        try await restarted.sync()
        let other = try await TestDevice(store: store, name: "b")
        #expect(try await other.tree().isEmpty)
        await restarted.shutdown()
        await other.shutdown()
    }

    /// Startup puts the database and the cache folder back in agreement, in one pass over
    /// the items: a clean file whose cache file is gone becomes a placeholder, a changed one
    /// whose content never reached the disk becomes empty (and is reported), cache files of
    /// no item go, whatever their place in inode order, and a second spelling of a real
    /// inode's name ("007") never takes the real one with it.
    @Test func startupReconcilesTheCacheFolderWithTheItems() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        try await a.write("clean.txt", "pushed")
        try await a.write("kept.txt", "stays")
        try await a.sync()
        // Not pushed before the "crash".
        link.faults = try StoreFaults(parsing: "errors=1")
        try await a.write("changed.txt", "never fsynced")
        let clean = try #require(a.inode("clean.txt"))
        let kept = try #require(a.inode("kept.txt"))
        let changed = try #require(a.inode("changed.txt"))
        await a.shutdown()
        unlink(a.cache.path(for: clean))
        unlink(a.cache.path(for: changed))
        let folder = (a.cache.path(for: kept) as NSString).deletingLastPathComponent
        let strays = [folder + "/0", folder + "/\(kept.rawValue + 1_000_000)", folder + "/\(changed.rawValue + 500)"]
        for path in strays + [folder + "/00\(kept)"] {
            #expect(FileManager.default.createFile(atPath: path, contents: Data("stray".utf8)))
        }

        try StateReconciler.reconcile(metadata: a.metadata, cache: a.cache, logger: Logger(label: "test"))

        let rows = try await a.metadata.read { db in
            (try ItemRow.find(ino: clean, db), try ItemRow.find(ino: changed, db), try ItemRow.find(ino: kept, db))
        }
        #expect(rows.0?.contentState == .placeholder)
        #expect(rows.1?.contentState == .local)
        #expect(a.cache.status(changed)?.size == 0)
        #expect(rows.2?.contentState == .local)
        #expect(a.cache.status(kept)?.size == 5)
        for path in strays { #expect(!FileManager.default.fileExists(atPath: path)) }

        let restarted = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        #expect(try await restarted.tree() == ["clean.txt": "pushed", "kept.txt": "stays", "changed.txt": ""])
        await restarted.shutdown()
    }

    static func records(in store: InMemoryStore) async throws -> Int {
        try await store.list(prefix: "journal/", startAfter: nil, limit: 10).count
    }

    /// Syncs through a link that loses every reply until the record is in the store:
    /// blocks land on one attempt, the record on a later one, and each attempt fails
    /// as the device sees it.
    static func syncUntilTheRecordLands(_ device: TestDevice, in store: InMemoryStore) async throws {
        for _ in 0..<5 {
            guard try await records(in: store) == 0 else { return }
            await #expect(throws: (any Error).self) { try await device.sync() }
        }
    }
}
