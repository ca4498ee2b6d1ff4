import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import CloudFileSystem
import Testing

/// A folder's mtime moves when a name in it changes (create, rename, delete), and that
/// time reaches every device with the change that moved it: `make`, `rsync -a`, `find
/// -newer` and file managers sorting by date see one tree. It is no edit of the folder:
/// a delete of the folder elsewhere still wins.
@Suite struct FolderTimeTests {
    static func mtime(_ device: TestDevice, _ path: String) throws -> Int64 {
        let ino = try #require(device.inode(path))
        let attributes = try device.core.attributes(ino)
        return attributes.mtime
    }

    @Test func aFoldersTimeTravelsWithTheChangeInsideIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("docs")
        try await a.write("docs/one.txt", "one")
        try await a.sync()
        try await b.sync()
        #expect(try Self.mtime(b, "docs") == Self.mtime(a, "docs"))
        let records = try await store.listAllObjects(prefix: ContainerLayout.journalPrefix).count

        for change in ["create", "rename", "delete"] {
            let before = try Self.mtime(a, "docs")
            try await Task.sleep(for: .milliseconds(5))
            switch change {
            case "create": try await a.write("docs/two.txt", "two")
            case "rename": try a.rename("docs/two.txt", "docs/three.txt")
            default: try a.remove("docs/three.txt")
            }
            #expect(try Self.mtime(a, "docs") > before, "\(change) moved the folder's time here")
            try await a.sync()
            try await b.sync()
            #expect(try Self.mtime(b, "docs") == Self.mtime(a, "docs"), "after a \(change)")
        }
        // Each change went in one record with the folder's new time: none of its own.
        #expect(try await store.listAllObjects(prefix: ContainerLayout.journalPrefix).count == records + 3)
        #expect(try await a.metadata.read { db in try ItemRow.dirtyRows(db) }.isEmpty)
        #expect(try await b.metadata.read { db in try ItemRow.dirtyRows(db) }.isEmpty)
        for device in [a, b] { await device.shutdown() }
    }

    /// b deletes a file in a folder (its time moves), a deletes that folder and the one
    /// above it: whichever commits first, both stay deleted on both devices.
    @Test(arguments: [true, false]) func aFoldersTimeIsNoEditThatKeepsItAgainstADelete(folderDeleteFirst: Bool) async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("docs")
        try a.mkdir("docs/sub")
        try await a.write("docs/sub/one.txt", "one")
        try await a.write("docs/sub/two.txt", "two")
        try await a.sync()
        try await b.sync()
        for path in ["docs/sub/one.txt", "docs/sub/two.txt", "docs/sub", "docs"] { try a.remove(path) }
        // Its time reaches a device that deleted it with the folder above: neither comes back.
        try b.remove("docs/sub/one.txt")
        if folderDeleteFirst {
            try await a.sync()
            try await b.sync()
            try await a.sync()
        } else {
            try await b.sync()
            try await a.sync()
            try await b.sync()
        }
        #expect(try await a.tree().isEmpty)
        #expect(try await b.tree().isEmpty)
        #expect(await a.engine.status().errors.isEmpty)
        for device in [a, b] { await device.shutdown() }
    }

    /// The root's own mode, times and xattrs travel in a record's `root` field (it has no
    /// upsert): `touch -d`, `chmod` and `setfattr` on the mount, and the time a create at
    /// the top moves, reach the other device and leave nothing pending; a device that
    /// joins from a checkpoint has them too.
    @Test func theRootsOwnChangesReachEveryDevice() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: CompactionTests.configuration())
        let b = try await TestDevice(store: store, name: "b", configuration: CompactionTests.configuration())
        try await a.write("top.txt", "top")
        try await a.sync()
        try await b.sync()
        #expect(try b.core.attributes(.root).mtime == a.core.attributes(.root).mtime)
        // `touch -d 2020-01-01 MOUNT`, `chmod 700 MOUNT`, `cp -a SRC/. MOUNT/`.
        _ = try await a.core.setAttributes(.root, AttributeChanges(mode: 0o700, mtime: .at(1_577_836_800_000_000_000)), handle: nil)
        try a.core.setXattr(.root, name: Array("user.tag".utf8), value: [1], flags: 0)
        #expect(try await a.metadata.read { db in try ItemRow.pendingCount(db) } == 1)
        try await a.sync()
        #expect(try await a.metadata.read { db in try ItemRow.pendingCount(db) } == 0)
        try await b.sync()
        let seen = try b.core.attributes(.root)
        #expect(seen.mtime == 1_577_836_800_000_000_000 && seen.permissions & 0o7777 == 0o700)
        #expect(try b.core.getXattr(.root, name: Array("user.tag".utf8)) == [1])
        #expect(try await b.metadata.read { db in try ItemRow.pendingCount(db) } == 0)

        // A field changed on each side meanwhile: both kept, as a folder's metadata.
        _ = try await a.core.setAttributes(.root, AttributeChanges(mode: 0o750), handle: nil)
        try b.core.setXattr(.root, name: Array("user.tag".utf8), value: [2], flags: 0)
        try await a.sync()
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try device.core.attributes(.root).permissions & 0o7777 == 0o750, "\(device.name)")
            #expect(try device.core.getXattr(.root, name: Array("user.tag".utf8)) == [2], "\(device.name)")
        }
        #expect(try a.core.attributes(.root).mtime == b.core.attributes(.root).mtime)

        // Through a checkpoint and a compaction to a new device.
        _ = try await CompactionTests.compact(a)
        let c = try await TestDevice(store: store, name: "c", configuration: CompactionTests.configuration())
        #expect(try c.core.attributes(.root).permissions & 0o7777 == 0o750)
        #expect(try c.core.attributes(.root).mtime == a.core.attributes(.root).mtime)
        #expect(try c.core.getXattr(.root, name: Array("user.tag".utf8)) == [2])
        #expect(try await c.metadata.read { db in try ItemRow.pendingCount(db) } == 0)
        for device in [a, b, c] { await device.shutdown() }
    }
}
