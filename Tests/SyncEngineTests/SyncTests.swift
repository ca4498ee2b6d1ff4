import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import GRDB
import Glibc
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Testing

/// Several devices on one store, with the real filesystem core and sync engine (no FUSE).
@Suite struct SyncTests {
    @Test func aSecondDeviceSeesPlaceholdersThenContent() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("docs")
        try await a.write("docs/one.txt", "first file")
        try await a.write("top.txt", String(repeating: "x", count: 10_000))
        try await a.sync()
        try await b.sync()
        let ino = try #require(b.inode("docs/one.txt"))
        let attributes = try b.core.attributes(ino)
        #expect(attributes.size == 10)
        #expect(attributes.blocks == 0)
        #expect(try await b.read("docs/one.txt") == "first file")
        #expect(try b.core.attributes(ino).blocks > 0)
        #expect(try await a.tree() == b.tree())
        await a.shutdown()
        await b.shutdown()
    }

    /// The first block is short (a reader of a placeholder gets its first byte once that block
    /// is verified) and the second ends at 1 MiB (so does the first MiB), the rest are the
    /// container's block size; the other device reads it whole.
    @Test func aFileIsCutIntoShortLeadingBlocksThenFullBlocks() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        let bytes: [UInt8] = (0..<((5 << 20) + 1000)).map { (i: Int) -> UInt8 in UInt8(truncatingIfNeeded: i &* 31 &+ (i >> 12)) }
        try await a.write("big.bin", bytes)
        try await a.sync()
        let ino = try #require(a.inode("big.bin"))
        let lengths = try await a.metadata.read { db in try ItemRow.find(ino: ino, db)?.blockList.map(\.length) }
        let expected: [Int64] = [256 << 10, 768 << 10, 4 << 20, 1000]
        #expect(lengths == expected)
        try await b.sync()
        let read = try await b.readBytes("big.bin")
        #expect(read == bytes)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func renamesOfPlaceholdersDoNotDownload() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("big.bin", String(repeating: "b", count: 100_000))
        try await a.sync()
        try await b.sync()
        try b.mkdir("archive")
        try b.rename("big.bin", "archive/big.bin")
        try await b.sync()
        let ino = try #require(b.inode("archive/big.bin"))
        #expect(try b.core.attributes(ino).blocks == 0)
        try await a.sync()
        #expect(a.inode("big.bin") == nil)
        #expect(try await a.read("archive/big.bin").count == 100_000)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func bothEditedKeepsBothVersions() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "alpha")
        let b = try await TestDevice(store: store, name: "beta")
        try await a.write("note.txt", "base")
        try await a.sync()
        try await b.sync()
        try await a.write("note.txt", "edited on alpha")
        try await b.write("note.txt", "edited on beta")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        let treeA = try await a.tree()
        let treeB = try await b.tree()
        #expect(treeA == treeB)
        #expect(treeA["note.txt"] == "edited on alpha")
        let copies = treeA.filter { $0.key.hasPrefix("note (conflict from beta ") && $0.key.hasSuffix(").txt") }
        #expect(copies.count == 1)
        #expect(copies.first?.value == "edited on beta")
        #expect(await b.engine.status().conflicts.count == 1)
        // The original lists its copies, on every device.
        for device in [a, b] {
            let ino = try #require(device.inode("note.txt"))
            let listed = String(decoding: try device.core.getXattr(ino, name: Array("user.ubiqfs.conflicts".utf8)), as: UTF8.self)
            #expect(listed == copies.first?.key)
        }
        // Deleting the copy resolves the conflict.
        try a.remove(try #require(copies.first?.key))
        let ino = try #require(a.inode("note.txt"))
        #expect(throws: FileSystemError.self) { try a.core.getXattr(ino, name: Array("user.ubiqfs.conflicts".utf8)) }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func anEditWinsOverADelete() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("project")
        try await a.write("project/keep.txt", "v1")
        try await a.sync()
        try await b.sync()
        try a.remove("project/keep.txt")
        try a.remove("project")
        try await b.write("project/keep.txt", "v2 from b")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == ["project": "/", "project/keep.txt": "v2 from b"])
        #expect(try await b.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
    }

    /// The edit that brought a folder back is taken away by its own device, with the
    /// folder: deleted on both sides, it stays deleted (it used to come back empty, pushed
    /// as new by the device that had deleted it first).
    @Test func aFolderBroughtBackForAnEditIsDeletedWithIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("project")
        try a.mkdir("kept")
        try await a.sync()
        try await b.sync()
        // a deletes both folders without syncing (offline); b adds a file to each, then
        // takes the file and the folder away again for one, and only the folder for the other.
        try a.remove("project")
        try a.remove("kept")
        try await b.write("project/notes", "b")
        try await b.write("kept/notes", "b")
        try await b.sync()
        try b.remove("project/notes")
        try b.remove("project")
        try b.rename("kept/notes", "notes")
        try b.remove("kept")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        #expect(try await a.tree() == ["notes": "b"])
        #expect(try await b.tree() == a.tree())
        #expect(await a.engine.status().pendingItems == 0)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aFolderDeletedOnBothDevicesStaysDeletedAfterAMoveIntoIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("project")
        try a.mkdir("stuff")
        try await a.sync()
        try await b.sync()
        // a deletes the folder without syncing; b moves something in and syncs, then deletes
        // the folder with what it moved in. a's sync brings the folder back for b's move, but
        // must not push it: b would take that for an edit and keep the folder it deleted.
        try a.remove("project")
        try b.rename("stuff", "project/stuff")
        try await b.sync()
        try b.remove("project/stuff")
        try b.remove("project")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == [:])
        #expect(try await b.tree() == [:])
        #expect(await a.engine.status().pendingItems == 0)
        #expect(await b.engine.status().pendingItems == 0)
        await a.shutdown()
        await b.shutdown()
    }

    /// A change there to an item this device moved out of a folder it then deleted: the item
    /// takes the change where it is, and the folder, which receives nothing, stays deleted
    /// (seed 17027586621917300470).
    @Test func aChangeToAnItemMovedOutOfAFolderDeletedHereLeavesTheFolderDeleted() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("d/f", "x")
        try await a.sync()
        try await b.sync()
        try b.rename("d/f", "f")
        try b.remove("d")
        try a.core.setXattr(try #require(a.inode("d/f")), name: Array("user.k".utf8), value: Array("v".utf8), flags: 0)
        try await a.sync()
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["f": "x"])
            #expect(try device.core.getXattr(try #require(device.inode("f")), name: Array("user.k".utf8)) == Array("v".utf8))
            #expect(await device.engine.status().pendingItems == 0)
        }
        await a.shutdown()
        await b.shutdown()
    }

    /// A folder moved here into a folder, then deleted with it; the delete of that folder
    /// lands from another device (deleted on both sides, its row purged here), then a
    /// change into the first folder: it comes back at its committed place, never under a
    /// folder this device no longer has (seed 15188457453163883222).
    @Test func aFolderBroughtBackWhoseLocalParentIsGoneEverywhere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let c = try await TestDevice(store: store, name: "c")
        try a.mkdir("F")
        try a.mkdir("d0")
        try await a.write("F/a.txt", "base")
        try await a.sync()
        try await c.sync()
        try c.rename("F", "d0/d1")
        try c.remove("d0/d1/a.txt")
        try c.remove("d0/d1")
        try c.remove("d0")
        // The kernel forgets every inode (as the soak does after each round): deleted rows
        // whose delete is settled can be purged.
        for ino in try await c.metadata.read({ db in try Inode.fetchAll(db, sql: "SELECT ino FROM item") }) {
            c.core.forget(ino, count: .max)
        }
        try a.remove("d0")
        try await a.sync()                          // a record deleting d0
        try await a.write("F/a.txt", "edit")
        try await a.sync()                          // a record changing F/a.txt
        try await c.sync()
        try await a.sync()
        try await c.sync()
        let broken = try await c.metadata.read { db in
            let rows = try ItemRow.fetchAll(db)
            let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
            return rows.filter { row in
                guard !row.deleted, row.inode != Inode.root else { return false }
                guard let parent = row.parent.flatMap({ byIno[$0] }) else { return true }
                return parent.deleted
            }.map { "\($0.itemName) parent \($0.parent.map { "\($0)" } ?? "nil")" }
        }
        #expect(broken.isEmpty, "live rows without a live folder on c: \(broken)")
        #expect(try await a.tree() == c.tree())
        let treeC = try await c.tree()
        #expect(treeC["F/a.txt"] == "edit", "\(treeC)")
        for device in [a, c] { await device.shutdown() }
    }

    @Test func crossedMovesNeverMakeACycleNorLoseAFolder() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("x")
        try a.mkdir("y")
        try await a.write("x/in-x.txt", "x")
        try await a.write("y/in-y.txt", "y")
        try await a.sync()
        try await b.sync()
        try a.rename("y", "x/y")
        try b.rename("x", "y/x")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        try await b.sync()
        let tree = try await a.tree()
        #expect(tree == (try await b.tree()))
        #expect(Set(tree.values) == ["/", "x", "y"])
        #expect(tree.count == 4)
        #expect(await b.engine.status().conflicts.contains { $0.contains("cycle") })
        await a.shutdown()
        await b.shutdown()
    }

    @Test(arguments: [true, false])
    func aMoveIntoAFolderDeletedElsewhereKeepsBoth(moverFirst: Bool) async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("target")
        try await a.write("loose.txt", "moved in")
        try await a.sync()
        try await b.sync()
        try a.rename("loose.txt", "target/loose.txt")
        try b.remove("target")
        let (first, second) = moverFirst ? (a, b) : (b, a)
        try await first.sync()
        try await second.sync()
        try await first.sync()
        #expect(try await a.tree() == ["target": "/", "target/loose.txt": "moved in"])
        #expect(try await b.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
    }

    @Test func metadataChangesMergeFieldByField() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("plan.txt", "plan")
        try await a.sync()
        try await b.sync()
        // Here a rename, there a chmod and an xattr: both survive, on both devices.
        try a.rename("plan.txt", "plan-v2.txt")
        let inoB = try #require(b.inode("plan.txt"))
        _ = try await b.core.setAttributes(inoB, AttributeChanges(mode: 0o600), handle: nil)
        try b.core.setXattr(inoB, name: Array("user.tag".utf8), value: Array("red".utf8), flags: 0)
        try await a.sync()
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            let ino = try #require(device.inode("plan-v2.txt"))
            #expect(device.inode("plan.txt") == nil)
            #expect(try device.core.attributes(ino).permissions == 0o600)
            #expect(try device.core.getXattr(ino, name: Array("user.tag".utf8)) == Array("red".utf8))
        }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func twoCreatesOfOneNameGetUniqueNames() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("same.txt", "from a")
        try await b.write("same.txt", "from b")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        let tree = try await a.tree()
        #expect(tree == (try await b.tree()))
        #expect(Set(tree.values) == ["from a", "from b"])
        #expect(tree["same.txt"] == "from a")
        #expect(tree["same (2).txt"] == "from b")
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aSafeSaveKeepsTheItemIdentity() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("doc.txt", "version 1")
        try await a.sync()
        let id = try a.core.getXattr(try #require(a.inode("doc.txt")), name: Array("user.ubiqfs.id".utf8))
        try await a.write(".doc.txt.swp", "version 2")
        try a.rename(".doc.txt.swp", "doc.txt")
        try await a.sync()
        let after = try a.core.getXattr(try #require(a.inode("doc.txt")), name: Array("user.ubiqfs.id".utf8))
        #expect(id == after)
        #expect(try await a.read("doc.txt") == "version 2")
        let b = try await TestDevice(store: store, name: "b")
        try await b.sync()
        #expect(try await b.tree() == ["doc.txt": "version 2"])
        await a.shutdown()
        await b.shutdown()
    }

    @Test func anUnreachableStoreLosesNothing() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("before.txt", "1")
        try await a.sync()
        store.isReachable = false
        try await a.write("offline.txt", "written offline")
        try a.remove("before.txt")
        do {
            try await a.sync()
            Issue.record("sync succeeded with the store offline")
        } catch let error as SyncError {
            #expect(error.code == .unreachable)
        }
        #expect(await a.engine.status().state == "offline")
        #expect(try await a.tree() == ["offline.txt": "written offline"])
        store.isReachable = true
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        try await b.sync()
        #expect(try await b.tree() == ["offline.txt": "written offline"])
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aNewDeviceStartsFromACheckpoint() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", checkpointInterval: 3)
        for index in 0..<5 {
            try await a.write("f\(index).txt", "content \(index)")
            try await a.sync()
        }
        #expect(store.keys.contains(ContainerLayout.checkpointKey(3)))
        // Journal records up to the checkpoint are no longer needed by a new device.
        for seq in 1...3 as ClosedRange<UInt64> { try await store.delete(ContainerLayout.journalKey(seq)) }
        let b = try await TestDevice(store: store, name: "b")
        try await b.sync()
        #expect(try await b.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
    }

    @Test func hostileOperationsAreRefusedOneByOne() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.sync()
        let good = ItemSnapshot(id: .random(), parent: .root, name: ByteString("fine.txt"), kind: .file, mode: 0o4755, mtime: 1, size: 0, blocks: [])
        let ops: [JournalOperation] = [
            .upsert(ItemSnapshot(id: .random(), parent: .root, name: ByteString("../../etc"), kind: .directory, mode: 0o755, mtime: 1, size: 0)),
            .upsert(ItemSnapshot(id: .random(), parent: .random(), name: ByteString("orphan"), kind: .directory, mode: 0o755, mtime: 1, size: 0)),
            .upsert(ItemSnapshot(id: .random(), parent: .root, name: ByteString("huge"), kind: .file, mode: 0o644, mtime: 1, size: -5, blocks: [])),
            .upsert(good),
            .delete(ItemID("../../x")),
            .upsert(ItemSnapshot(
                id: .random(), parent: .root, name: ByteString("overflow"), kind: .file, mode: 0o644, mtime: 1, size: 1,
                blocks: [BlockReference(hash: String(repeating: "a", count: 64), length: Int64.max), BlockReference(hash: String(repeating: "b", count: 64), length: 2)]
            )),
        ]
        let record = JournalRecord(device: "evil", deviceName: "evil", commit: "x", time: 0, ops: ops)
        #expect(try await store.putIfAbsent(ContainerLayout.journalKey(1), RecordCodec.encode(record)))
        _ = try await store.putIfAbsent(ContainerLayout.journalKey(2), Array("not json".utf8))
        try await a.sync()
        #expect(try await a.tree() == ["fine.txt": ""])
        let ino = try #require(a.inode("fine.txt"))
        #expect(try a.core.attributes(ino).permissions == 0o755)
        #expect(await a.engine.status().errors.count >= 5)
        try await a.write("after.txt", "still works")
        try await a.sync()
        await a.shutdown()
    }

    /// `forgotten`: the kernel had no reference left when the file was deleted, so its
    /// content was dropped at once, and b's edit arrives before a's delete is pushed: the
    /// item comes back under the same inode (found by the soak: the next write was never
    /// pushed).
    @Test(arguments: [false, true])
    func aWriteAfterAnEditWonOverADeleteIsPushed(forgotten: Bool) async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f.txt", "v1")
        try await a.sync()
        try await b.sync()
        // Edited and deleted here, edited there: b's version comes back on a...
        try await a.write("f.txt", "edited, then deleted on a")
        let ino = try #require(a.inode("f.txt"))
        if forgotten {
            a.core.forget(ino, count: .max)
            try a.core.unlink(parent: Inode.root, name: Array("f.txt".utf8), directory: false)
            try a.core.fsyncDirectory(Inode.root)  // the delete on disk, its content goes
            #expect(a.cache.status(ino) == nil)
        } else {
            try a.remove("f.txt")
        }
        try await b.write("f.txt", "v2 from b")
        if forgotten {
            try await b.sync()
        } else {
            try await a.sync()
            try await b.sync()
        }
        try await a.sync()
        #expect(try await a.read("f.txt") == "v2 from b")
        // ...and the next write to it on a is a change like any other.
        try await a.write("f.txt", "v3 from a")
        let current = try #require(a.inode("f.txt"))
        let dirty = try await a.metadata.read { db in try ItemRow.find(ino: current, db)?.dirtyFlags }
        #expect(dirty?.contains(.content) == true)
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["f.txt": "v3 from a"])
        #expect(try await a.tree() == b.tree())
        await a.shutdown()
        await b.shutdown()
    }

    @Test func anItemReplacedHereAndEditedThereComesBackBesideItsReplacement() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f.txt", "f v1")
        try await a.write("g.txt", "g")
        try await a.write("h.txt", "h v1")
        try await a.sync()
        try await b.sync()
        try a.rename("g.txt", "f.txt")
        try a.remove("h.txt")
        try await a.write("h.txt", "new h on a")
        try await b.write("f.txt", "f v2 from b")
        try await b.write("h.txt", "h v2 from b")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        let expected = ["f.txt": "f v2 from b", "f (2).txt": "g", "h.txt": "h v2 from b", "h (2).txt": "new h on a"]
        #expect(try await a.tree() == expected)
        #expect(try await b.tree() == expected)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aFolderMovedIntoAFolderDeletedThereKeepsItsContents() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("archive")
        try a.mkdir("photos")
        try await a.write("photos/keep.jpg", "keep")
        try await a.sync()
        try await b.sync()
        try a.rename("photos", "archive/photos")
        try b.remove("archive")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        let expected = ["archive": "/", "archive/photos": "/", "archive/photos/keep.jpg": "keep"]
        #expect(try await a.tree() == expected)
        #expect(try await b.tree() == expected)
        await a.shutdown()
        await b.shutdown()
    }

    /// Found by the soak: names that change hands inside one record (a swap through a
    /// temporary name, a folder renamed over one it replaces) are not a clash between
    /// devices, on any device, including one that replays the journal later.
    @Test func namesThatChangeHandsInOneRecordAreNoClash() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("x.txt", "X")
        try await a.write("y.txt", "Y")
        try a.mkdir("d1")
        try await a.write("d1/inside.txt", "in d1")
        try a.mkdir("d2")
        try await a.sync()
        try await b.sync()
        try a.rename("x.txt", "tmp")
        try a.rename("y.txt", "x.txt")
        try a.rename("tmp", "y.txt")
        try a.rename("d1", "d2")
        try await a.sync()
        try await b.sync()
        let expected = ["x.txt": "Y", "y.txt": "X", "d2": "/", "d2/inside.txt": "in d1"]
        #expect(try await a.tree() == expected)
        #expect(try await b.tree() == expected)
        // Nothing to push afterwards: the other device saw no conflict of its own.
        let records = try await store.list(prefix: "journal/", startAfter: nil, limit: 100).count
        try await b.sync()
        try await a.sync()
        #expect(try await store.list(prefix: "journal/", startAfter: nil, limit: 100).count == records)
        try a.remove("x.txt")
        try a.remove("y.txt")
        try await a.sync()
        let late = try await TestDevice(store: store, name: "late")
        #expect(try await late.tree() == ["d2": "/", "d2/inside.txt": "in d1"])
        for device in [a, b, late] { await device.shutdown() }
    }

    /// A read-only mount's engine applies other devices' changes and pushes nothing, not
    /// even a change an earlier read-write mount left pending (the kernel refuses new ones).
    @Test func aReadOnlyEnginePullsAndNeverPushes() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        var readOnly = SyncConfiguration()
        readOnly.readOnly = true
        let b = try await TestDevice(store: store, name: "b", configuration: readOnly)
        try await b.write("pending.txt", "left by an earlier mount")
        try await a.write("from-a.txt", "hello")
        try await a.sync()
        let records = store.count(under: ContainerLayout.journalPrefix)
        try await b.sync()
        #expect(try await b.read("from-a.txt") == "hello")
        #expect(store.count(under: ContainerLayout.journalPrefix) == records)
        // The file, and the root's time its create moved (a change here, kept against a's).
        #expect(await b.engine.status().pendingItems == 2)
        #expect(await b.engine.status().readOnly == true)
        await a.shutdown()
        await b.shutdown()
        #expect(store.count(under: ContainerLayout.journalPrefix) == records)
    }
}
