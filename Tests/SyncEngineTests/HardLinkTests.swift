import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Testing

/// Hard links (format 3): a file with several names is one item on every device. Each
/// rule of docs/SEMANTICS.md ("Hard links") and the format's ("Links") has a test here.
@Suite struct HardLinkTests {
    static func nlink(_ device: TestDevice, _ path: String) throws -> UInt32 {
        try device.core.attributes(try #require(device.inode(path))).nlink
    }

    static func pending(_ device: TestDevice) async throws -> [ItemRow] {
        try await device.metadata.read { db in try ItemRow.dirtyRows(db) }
    }

    @Test func namesShareOneItemAndTheItemGoesWithItsLastName() async throws {
        let a = try await TestDevice(store: InMemoryStore(), name: "a")
        try a.mkdir("d")
        try await a.write("f.txt", "one")
        let attributes = try a.link("f.txt", "d/g.txt")
        #expect(attributes.nlink == 2)
        #expect(a.inode("f.txt") == a.inode("d/g.txt"))
        try await a.write("d/g.txt", "two")
        #expect(try await a.read("f.txt") == "two")
        // Folders cannot be linked; a taken name is taken.
        #expect(throws: FileSystemError.self) { try a.link("d", "e") }
        #expect(throws: FileSystemError.self) { try a.link("f.txt", "d/g.txt") }
        // Its own name goes: the item lives on under the other.
        let ino = a.inode("f.txt")
        try a.remove("f.txt")
        #expect(a.inode("f.txt") == nil)
        #expect(a.inode("d/g.txt") == ino)
        #expect(try Self.nlink(a, "d/g.txt") == 1)
        #expect(try await a.read("d/g.txt") == "two")
        try a.remove("d/g.txt")
        #expect(try await a.tree() == ["d": "/"])
        await a.shutdown()
    }

    @Test func renameOverOneOfItsOwnNamesDoesNothing() async throws {
        let a = try await TestDevice(store: InMemoryStore(), name: "a")
        try await a.write("a", "x")
        try a.link("a", "b")
        try a.rename("a", "b")
        try a.rename("b", "a")
        #expect(try await a.tree() == ["a": "x", "b": "x"])
        // A rename over another file's name removes that name only.
        try await a.write("c", "y")
        try a.link("c", "c2")
        try a.rename("a", "c")
        #expect(try await a.tree() == ["b": "x", "c": "x", "c2": "y"])
        #expect(try Self.nlink(a, "c2") == 1)
        #expect(try Self.nlink(a, "b") == 2)
        await a.shutdown()
    }

    /// A safe save (new file renamed over the original) keeps the original's identity,
    /// but not over a file with other names: those keep the old content, as on ext4.
    @Test func aSafeSaveOverALinkedFileLeavesTheOtherNameTheOldContent() async throws {
        let a = try await TestDevice(store: InMemoryStore(), name: "a")
        try await a.write("doc", "old")
        try a.link("doc", "backup")
        try await a.sync()
        try await a.write("doc.tmp", "new")
        try a.rename("doc.tmp", "doc")
        #expect(try await a.tree() == ["doc": "new", "backup": "old"])
        #expect(try Self.nlink(a, "backup") == 1)
        await a.shutdown()
    }

    @Test func namesTravelAndShareOneDownload() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("x")
        try a.mkdir("y")
        try await a.write("x/f", "content")
        try a.link("x/f", "y/g")
        try a.link("x/f", "h")
        try await a.sync()
        #expect(try await Self.pending(a).isEmpty)
        try await b.sync()
        #expect(b.inode("x/f") == b.inode("y/g"))
        #expect(b.inode("h") == b.inode("x/f"))
        #expect(try Self.nlink(b, "h") == 3)
        #expect(try await b.read("y/g") == "content")
        #expect(try await b.tree() == a.tree())
        // A name removed there goes here, the others stay; the item's own name too.
        try a.remove("x/f")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["x": "/", "y": "/", "y/g": "content", "h": "content"])
        #expect(try Self.nlink(b, "h") == 2)
        // A new device joins with the names.
        let c = try await TestDevice(store: store, name: "c")
        try await c.sync()
        #expect(try await c.tree() == a.tree())
        #expect(c.inode("h") == c.inode("y/g"))
        for device in [a, b, c] { await device.shutdown() }
    }

    /// An edit through one name here and through another there is one conflict: one copy.
    @Test func editsThroughTwoNamesOnTwoDevicesAreOneConflict() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f.txt", "base")
        try a.link("f.txt", "g.txt")
        try await a.sync()
        try await b.sync()
        try await a.write("f.txt", "from a")
        try await b.write("g.txt", "from b")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            let tree = try await device.tree()
            #expect(tree["f.txt"] == "from a")
            #expect(tree["g.txt"] == "from a")
            #expect(tree.count == 3, "one conflict copy: \(tree)")
            #expect(tree.values.filter { $0 == "from b" }.count == 1)
        }
        #expect(try await a.tree() == b.tree())
        for device in [a, b] { await device.shutdown() }
    }

    /// Every name removed there while the content was edited here: the edit stays, under
    /// every name it had.
    @Test func anEditKeepsEveryNameAgainstADeleteOfAllOfThem() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("f", "base")
        try a.link("f", "d/g")
        try await a.sync()
        try await b.sync()
        try a.remove("f")
        try a.remove("d/g")
        try await a.sync()
        try await b.write("d/g", "edited")
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["d": "/", "d/g": "edited", "f": "edited"])
        }
        // One name removed there while edited here is just that name gone.
        try a.remove("f")
        try await a.sync()
        try await b.write("d/g", "again")
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["d": "/", "d/g": "again"])
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// Removing the item's own name of several (the item takes a link's place) is no edit:
    /// every name removed on the other device takes the item, whichever pushes first.
    @Test(arguments: [true, false]) func aNameRemovedIsNoEditAgainstADeleteOfEveryName(removalFirst: Bool) async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("f", "content")
        try a.link("f", "d/g")
        try await a.sync()
        try await b.sync()
        try b.remove("f")
        try a.remove("f")
        try a.remove("d/g")
        for device in removalFirst ? [b, a, b] : [a, b, a] { try await device.sync() }
        for device in [a, b] {
            #expect(try await device.tree() == ["d": "/"])
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// The same in records of one operation: the link's delete and the item's move to its
    /// place go in one record all the same, or the move alone reads as an edit there and
    /// brings back the item every name of which was removed (seed 3021629861215394263).
    @Test func aNameRemovedIsNoEditAgainstADeleteOfEveryNameInRecordsOfOneOperation() async throws {
        let store = InMemoryStore()
        var configuration = SyncConfiguration()
        configuration.maxOperationsPerRecord = 1
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        let b = try await TestDevice(store: store, name: "b", configuration: configuration)
        try a.mkdir("d")
        try await a.write("f", "content")
        try a.link("f", "d/g")
        try await a.sync()
        try await b.sync()
        try b.remove("f")
        try a.remove("f")
        try a.remove("d/g")
        for device in [b, a, b] { try await device.sync() }
        for device in [a, b] {
            #expect(try await device.tree() == ["d": "/"])
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// Here the item's own name removed (it took its link's place); there that link's folder
    /// removed and the item edited under its own name: the edit stays, where the other device
    /// has it (seed 7709610945279367027).
    @Test func anEditThereKeepsAnItemWhoseLinkBothRemoved() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("n", "base")
        try a.link("n", "d/l")
        try await a.sync()
        try await b.sync()
        try a.remove("n")
        try await b.write("n", "edited there")
        try b.remove("d/l")
        try b.remove("d")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["n": "edited there"])
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// Here the item's own name removed (it took its link's place); there that link's folder
    /// removed, and a new name made elsewhere: the item lives on under the new name, the one
    /// name no device removed (seed 10600133440874791285).
    @Test func aNameRemovedIntoAFolderDeletedThereMovesOnToANameMadeThere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("f", "base")
        try a.link("f", "d/l")
        try await a.sync()
        try await b.sync()
        try a.remove("f")
        try b.link("f", "e")
        try b.remove("d/l")
        try b.remove("d")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["e": "base"])
            #expect(try Self.nlink(device, "e") == 1)
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// A chmod after a name removed is an edit like any: it stays against the other device's
    /// content change (seed 18120039795834868131).
    @Test func aChmodAfterANameRemovedIsAnEdit() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f", "base")
        try a.link("f", "g")
        try await a.sync()
        try await b.sync()
        try a.remove("f")
        _ = try await a.core.setAttributes(try #require(a.inode("g")), AttributeChanges(mode: 0o600), handle: nil)
        try await b.write("f", "edited there")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["g": "edited there"])
            #expect(try device.core.attributes(try #require(device.inode("g"))).permissions & 0o777 == 0o600)
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// A name added here to a file deleted there keeps the file, with its names.
    @Test func aNewNameKeepsAFileDeletedElsewhere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f", "keep me")
        try await a.sync()
        try await b.sync()
        try a.remove("f")
        try await a.sync()
        try b.link("f", "g")
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["f": "keep me", "g": "keep me"])
        }
        #expect(try await Self.pending(a).isEmpty)
        #expect(try await Self.pending(b).isEmpty)
        for device in [a, b] { await device.shutdown() }
    }

    /// Edited then deleted here, named anew there: the item comes back here as committed
    /// (the other device's change wins over the delete), not with what this device wrote
    /// before deleting it, and it is not left marked as changed here.
    @Test func aNewNameThereBringsBackAnItemEditedAndDeletedHere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f", "committed")
        try await a.sync()
        try await b.sync()
        try a.link("f", "g")
        try await a.sync()
        try await b.write("f", "edited here")
        try b.remove("f")
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["f": "committed", "g": "committed"])
            #expect(try await Self.pending(device).isEmpty)
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// A folder deleted with a file and its other name in it comes back from the trash with
    /// both names, on every device; a name removed alone is no trash entry.
    @Test func aFolderRestoredFromTheTrashBringsBackItsLinks() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try await a.write("d/f", "content")
        try a.link("d/f", "d/g")
        try a.link("d/f", "h")
        try await a.sync()
        try a.remove("h")
        try await a.sync()
        #expect(try a.core.trash().isEmpty, "one name of several removed: nothing in the trash")
        for path in ["d/g", "d/f", "d"] { try a.remove(path) }
        try await a.sync()
        try await b.sync()
        #expect(try b.core.trash().map(\.path) == ["/d"])
        _ = try b.core.restoreFromTrash(path: "d")
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            #expect(try await device.tree() == ["d": "/", "d/f": "content", "d/g": "content"])
            #expect(device.inode("d/f") == device.inode("d/g"))
        }
        for device in [a, b] { await device.shutdown() }
    }

    /// A pinned folder holding one name of a file pins the file, under every name.
    @Test func aPinnedFolderPinsTheFilesLinkedIntoIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("keep")
        try await a.write("f.bin", String(repeating: "x", count: 300_000))
        try a.link("f.bin", "keep/f.bin")
        try await a.sync()
        try await b.sync()
        let file = try #require(b.inode("f.bin"))
        let pinned = Array("user.ubiqfs.pinned".utf8)
        #expect(try b.core.getXattr(file, name: pinned) == Array("0".utf8))
        try b.core.setXattr(try #require(b.inode("keep")), name: pinned, value: Array("1".utf8), flags: 0)
        #expect(try b.core.getXattr(file, name: pinned) == Array("1".utf8))
        #expect(try await b.waitUntilLocal("f.bin"), "downloaded for the pinned folder")
        #expect(throws: FileSystemError.self) { try b.core.evict(file) }
        // Unpinned, an evict of the folder evicts the file it holds a name of.
        try b.core.setXattr(try #require(b.inode("keep")), name: pinned, value: Array("0".utf8), flags: 0)
        try b.core.evict(try #require(b.inode("keep")))
        #expect(try b.core.getXattr(file, name: Array("user.ubiqfs.state".utf8)) == Array("placeholder".utf8))
        for device in [a, b] { await device.shutdown() }
    }

    /// A link to a file still being written waits for its item's content, in one record
    /// with it or after it: no device ever meets a link to an item it does not have.
    @Test func aLinkToAFileNotYetCommittedWaitsForIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        let handle = try a.core.create(parent: Inode.root, name: Array("big".utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller).1
        _ = try Array("written".utf8).withUnsafeBytes { try a.core.write(handle: handle, data: $0, offset: 0) }
        try a.link("big", "other")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().errors.isEmpty)
        #expect(b.inode("other") == nil || b.inode("other") == b.inode("big"))
        a.core.release(handle: handle)
        try await a.sync()
        try await b.sync()
        #expect(b.inode("other") == b.inode("big"))
        #expect(await b.engine.status().errors.isEmpty)
        for device in [a, b] { await device.shutdown() }
    }
}
