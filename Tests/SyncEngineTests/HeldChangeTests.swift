import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import SyncEngine
import Synchronization
import Testing

/// A file held open for writing holds back only its own change: another device's change to
/// it waits for it alone (persisted, superseded by later ones), everything else goes on both
/// ways, and when the writer closes the change is applied by the usual rules.
@Suite struct HeldChangeTests {
    /// Two devices that both have `log.txt` = "v1", and b's handle open for writing on it.
    func devicesWithAWriter(_ store: InMemoryStore) async throws -> (a: TestDevice, b: TestDevice, writer: UInt64) {
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("log.txt", "v1")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("log.txt") == "v1")
        let writer = try await b.open(try #require(b.inode("log.txt")), flags: O_RDWR)
        return (a, b, writer)
    }

    @Test func aFileOpenForWritingHoldsBackOnlyItsOwnChange() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        let seen = Mutex<[String]>([])
        let subscription = b.engine.feed.subscribe { event in seen.withLock { $0.append("\(event.event.rawValue) \(event.path)") } }
        // One record: log.txt's new content and a new file.
        let records = store.count(under: ContainerLayout.journalPrefix)
        try await a.write("log.txt", "v2 from a")
        try await a.write("new-from-a.txt", "hello")
        try await a.sync()
        #expect(store.count(under: ContainerLayout.journalPrefix) == records + 1)
        try await b.sync()
        // The rest of the record landed; the held file keeps what the writer opened.
        #expect(try await b.read("new-from-a.txt") == "hello")
        #expect(try await b.read("log.txt") == "v1")
        let status = await b.engine.status()
        #expect(status.held?.count == 1)
        #expect(status.held?.first?.hasPrefix("/log.txt:") == true)
        #expect(status.lastError == nil)
        // Both ways, later records and local changes alike.
        try await b.write("from-b.txt", "b was here")
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("from-b.txt") == "b was here")
        try await a.write("later.txt", "later")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("later.txt") == "later")
        // Closed without a write: the other device's version is applied.
        b.core.release(handle: writer)
        try await b.sync()
        #expect(try await b.read("log.txt") == "v2 from a")
        #expect(await b.engine.status().held?.isEmpty == true)
        try await a.sync()
        #expect(try await a.tree() == b.tree())
        b.engine.feed.unsubscribe(subscription)
        let events = seen.withLock { $0 }
        let heldAt = try #require(events.firstIndex(of: "held /log.txt"))
        #expect(events[heldAt...].contains("modified /log.txt"))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aHeldChangeMeetsTheWritersVersionAsAConflictBothKept() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try await a.write("log.txt", "v2 from a")
        try await a.sync()
        try await b.sync()
        _ = try await b.core.write(handle: writer, bytes: Array("written on b".utf8), offset: 0)
        try b.core.fsync(handle: writer)
        // Written, but its change is not pushed over the held one.
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("log.txt") == "v2 from a")
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        for device in [a, b] {
            let tree = try await device.tree()
            #expect(tree["log.txt"] == "v2 from a")
            let copies = tree.filter { $0.key.hasPrefix("log (conflict from b ") }
            #expect(copies.count == 1)
            #expect(copies.first?.value == "written on b")
        }
        #expect(try await a.tree() == b.tree())
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aHeldChangeSurvivesARestart() async throws {
        let store = InMemoryStore()
        let (a, b, _) = try await devicesWithAWriter(store)
        try await a.write("log.txt", "v2 from a")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        // The daemon stops with the file still open; the next start has no writer.
        await b.shutdown()
        let restarted = try await TestDevice(store: store, name: "b", stateDir: b.stateDir)
        #expect(try await restarted.read("log.txt") == "v2 from a")
        #expect(await restarted.engine.status().held?.isEmpty == true)
        try await a.sync()
        #expect(try await a.tree() == restarted.tree())
        await a.shutdown()
        await restarted.shutdown()
    }

    /// Versions are the file's whatever this device does with its content: a held change
    /// that a later one replaces is still a version here, as on every other device.
    @Test func aHeldChangeThatALaterOneReplacesIsStillAVersion() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        for version in ["v2", "v3"] {
            try await a.write("log.txt", version)
            try await a.sync()
            try await b.sync()
        }
        func versions(_ device: TestDevice) throws -> [String] {
            try device.core.versions(try #require(device.inode("log.txt"))).versions.map { "\($0.seq) \($0.size)" }
        }
        #expect(try versions(b) == versions(a))
        b.core.release(handle: writer)
        try await b.sync()
        #expect(try await b.read("log.txt") == "v3")
        #expect(try versions(b) == versions(a))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aLaterChangeReplacesAHeldOneAndADeleteWaitsToo() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try a.mkdir("docs")
        try await a.write("docs/kept.txt", "in the folder")
        try await a.sync()
        try await b.sync()
        for version in ["v2", "v3"] {
            try await a.write("log.txt", version)
            try await a.sync()
            try await b.sync()
        }
        #expect(await b.engine.status().held?.count == 1)
        try a.remove("log.txt")
        try await a.sync()
        try await b.sync()
        // The delete waits for the writer too: the file is still there, as it was opened.
        #expect(try await b.read("log.txt") == "v1")
        #expect(await b.engine.status().held?.count == 1)
        // A folder delete that would take an open file waits the same way.
        let inside = try await b.open(try #require(b.inode("docs/kept.txt")), flags: O_WRONLY)
        try a.remove("docs/kept.txt")
        try a.remove("docs")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("docs/kept.txt") == "in the folder")
        #expect(await b.engine.status().held?.count == 3)
        b.core.release(handle: writer)
        b.core.release(handle: inside)
        try await b.sync()
        #expect(b.inode("log.txt") == nil)
        #expect(b.inode("docs") == nil)
        #expect(await b.engine.status().held?.isEmpty == true)
        try await a.sync()
        #expect(try await a.tree() == b.tree())
        await a.shutdown()
        await b.shutdown()
    }

    /// A folder delete held for a writer inside: what this device puts in the folder
    /// meanwhile stays here (the others no longer have the folder), and goes out with the
    /// folder once the delete lands and meets it (an edit wins over a delete).
    @Test func whatIsPutInAFolderWhoseDeleteIsHeldWaitsForIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("docs")
        try await a.write("docs/kept.txt", "in the folder")
        try await a.sync()
        try await b.sync()
        let writer = try await b.open(try #require(b.inode("docs/kept.txt")), flags: O_RDWR)
        try a.remove("docs/kept.txt")
        try a.remove("docs")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 2)
        try await b.write("docs/new.txt", "new on b")
        try await b.write("elsewhere.txt", "also new on b")
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("elsewhere.txt") == "also new on b")
        #expect(a.inode("docs") == nil)
        #expect(await a.engine.status().lastError == nil)
        #expect(await a.engine.status().errors.isEmpty)
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("docs/new.txt") == "new on b")
        #expect(a.inode("docs/kept.txt") == nil)
        #expect(try await a.tree() == b.tree())
        #expect(await b.engine.status().held?.isEmpty == true)
        await a.shutdown()
        await b.shutdown()
    }

    /// Another device deletes a held file and puts a new one in its place: here the held
    /// one steps aside without that being a change of this device, so its delete still
    /// lands when the writer closes (pushed, the rename would bring it back everywhere).
    @Test func aHeldItemStepsAsideHereOnlyAndItsDeleteStillLands() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try a.remove("log.txt")
        try await a.write("log.txt", "a new file")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("log.txt") == "a new file")
        #expect(try await b.tree().count == 2)
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == ["log.txt": "a new file"])
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        #expect(try await b.tree() == ["log.txt": "a new file"])
        #expect(try await a.tree() == ["log.txt": "a new file"])
        await a.shutdown()
        await b.shutdown()
    }

    /// What a writer's open did itself (`O_TRUNC`, a create) is its first write: the empty
    /// file is not published while the program has not written the rest (`cmd > file`).
    @Test func aTruncatingOrCreatingOpenPublishesNothingUntilItsWriterIsDone() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("out.txt", "old output")
        try await a.sync()
        let truncating = try await a.open(try #require(a.inode("out.txt")), flags: O_WRONLY | O_TRUNC)
        let (_, creating) = try a.core.create(parent: .root, name: Array("new.txt".utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller)
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("out.txt") == "old output")
        #expect(b.inode("new.txt") == nil)
        for (handle, text) in [(truncating, "new output"), (creating, "made")] {
            _ = try await a.core.write(handle: handle, bytes: Array(text.utf8), offset: 0)
            a.core.release(handle: handle)
        }
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("out.txt") == "new output")
        #expect(try await b.read("new.txt") == "made")
        await a.shutdown()
        await b.shutdown()
    }

    /// The writer closed before the next record is pulled: the held change lands first,
    /// in journal order, so a later delete meets the version it replaced (found by the
    /// randomized test, seed 4428222319925501327).
    @Test func aHeldChangeWhoseWriterClosedLandsBeforeTheNextRecord() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try await a.write("log.txt", "v2 from a")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        b.core.release(handle: writer)
        try a.remove("log.txt")
        try await a.sync()
        // Renamed here, so kept against the delete (the edit wins): with a's version, the
        // one it had when it was deleted there.
        try b.rename("log.txt", "kept.txt")
        try await b.sync()
        try await a.sync()
        for device in [a, b] { #expect(try await device.tree() == ["kept.txt": "v2 from a"]) }
        for device in [a, b] { await device.shutdown() }
    }

    /// A held delete that replaced a held new version waits for the writer too, even when
    /// the item changed here otherwise: nothing of it is pushed while the writer is open
    /// (seed 12035448589021857692).
    @Test func aHeldDeleteWaitsForItsWriterWhateverElseChangedHere() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try await a.write("log.txt", "v2 from a")
        try await a.sync()
        try await b.sync()
        try b.rename("log.txt", "renamed.txt")
        try a.remove("log.txt")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        #expect(await b.engine.status().held?.count == 1)
        #expect(try await a.tree().isEmpty, "nothing of the held item pushed while its writer is open")
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == b.tree())
        #expect(await b.engine.status().held?.isEmpty == true)
        for device in [a, b] { await device.shutdown() }
    }

    /// A name made for a file whose delete is held is held with it: no device meets a link
    /// to an item the committed tree deleted; once the writer closes, the new name keeps the
    /// file, with its names (seed 5443856938670463942).
    @Test func aLinkToAFileWhoseDeleteIsHeldWaitsWithIt() async throws {
        let store = InMemoryStore()
        let (a, b, writer) = try await devicesWithAWriter(store)
        try a.remove("log.txt")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        try b.link("log.txt", "also.txt")
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree().isEmpty, "nothing of the held item pushed")
        #expect(await a.engine.status().errors.isEmpty)
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        for device in [a, b] { #expect(try await device.tree() == ["log.txt": "v1", "also.txt": "v1"]) }
        for device in [a, b] { await device.shutdown() }
    }

    /// A link held back for a writer (its item has a held change) lands in a folder after
    /// another device deleted that folder, which it saw empty: the folder comes back, as
    /// for any remote upsert into a folder deleted locally (seed 9750427853464762480).
    @Test func aHeldBackLinkBringsBackTheFolderAnotherDeviceDeletedEmpty() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("notes", "v1")
        try await a.sync()
        try await b.sync()
        // a holds notes open for writing; b's new version of it is held on a.
        let writer = try await a.open(try #require(a.inode("notes")), flags: O_WRONLY)
        try await b.write("notes", "v2 from b")
        try await b.sync()
        try await a.sync()
        #expect(await a.engine.status().held?.count == 1)
        // a makes d and links notes into it: d is pushed, the link is held back.
        try a.mkdir("d")
        try a.link("notes", "d/n")
        try await a.sync()
        #expect(try await a.engine.heldBack().count == 1)
        try await b.sync()
        #expect(try await b.tree() == ["d": "/", "notes": "v2 from b"])
        // b deletes d, which it has empty; a's writer closes and a pushes the link first.
        try b.remove("d")
        a.core.release(handle: writer)
        try await a.sync()
        try await b.sync()
        try await a.sync()
        let treeB = try await b.tree()
        #expect(treeB == ["d": "/", "d/n": "v2 from b", "notes": "v2 from b"])
        #expect(try await a.tree() == treeB)
        await a.shutdown()
        await b.shutdown()
    }

    /// A content edit kept back behind a held change (here: a safe save of a file that a
    /// record then moves to where the held file is committed) goes out only when the writer
    /// closes; an edit made elsewhere meanwhile, which had not seen it, becomes the conflict
    /// copy (seed 2122289853986752852).
    @Test func aHeldBackEditGoesOutWhenItsWriterClosesAndMeetsALaterEditAsAConflict() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("x.txt", "x1")
        try await a.write("y.txt", "y1")
        try await a.sync()
        try await b.sync()
        // b holds x.txt open for writing, and safe-saves y.txt (content and metadata changed).
        let writer = try await b.open(try #require(b.inode("x.txt")), flags: O_RDWR)
        try await b.write(".saving", "y from b")
        try b.rename(".saving", "y.txt")
        // a changes x.txt and moves it away, and moves y.txt to x.txt's place.
        try await a.write("x.txt", "x2")
        try a.rename("x.txt", "moved.txt")
        try a.rename("y.txt", "x.txt")
        try await a.sync()
        // On b x.txt's change is held; y.txt follows to x.txt, where the held item is
        // committed as b last saw it: b's edit of it waits for the held change.
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        #expect(try await b.engine.heldBack().count == 1)
        try await a.sync()
        #expect(try await a.read("x.txt") == "y1", "nothing of b's edit pushed yet")
        // a edits the file; b's writer closes and b syncs first: b's edit lands first.
        try await a.write("x.txt", "y from a")
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        try await b.sync()
        let tree = try await a.tree()
        #expect(tree["x.txt"] == "y from b")
        #expect(tree["moved.txt"] == "x2")
        let copies = tree.filter { $0.key.contains(" (conflict from a ") }
        #expect(copies.values.sorted() == ["y from a"])
        #expect(try await b.tree() == tree)
        await a.shutdown()
        await b.shutdown()
    }

    /// A link put where a link to a held file is committed waits for the held change
    /// (`HeldScope`: "put where an item kept back is committed"), although the file it
    /// names is not held: until the writer closes, that name (and the file's count of
    /// names) differs between the devices; then they converge (seed 6614765726771655821).
    @Test func aLinkPutWhereAHeldFilesLinkIsCommittedWaitsForTheWriter() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("x.txt", "x1")
        try await a.write("y.txt", "y1")
        try a.link("x.txt", "l.md")
        try await a.sync()
        try await b.sync()
        // b holds x.txt open for writing, moves the link to it away, and links y.txt in its place.
        let writer = try await b.open(try #require(b.inode("x.txt")), flags: O_RDWR)
        try b.rename("l.md", "moved.md")
        #expect(try b.link("y.txt", "l.md").nlink == 2)
        // a changes x.txt: on b the change is held, so is the move of a link to x.txt, and
        // the new link waits for that one (the others have it at l.md).
        try await a.write("x.txt", "x2")
        try await a.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        #expect(try await b.engine.heldBack().count == 2)
        try await a.sync()
        #expect(try await a.read("l.md") == "x2")
        #expect(try await b.read("l.md") == "y1")
        #expect(try a.core.attributes(try #require(a.inode("y.txt"))).nlink == 1)
        #expect(try b.core.attributes(try #require(b.inode("y.txt"))).nlink == 2)
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        let tree = try await a.tree()
        #expect(tree == ["x.txt": "x2", "moved.md": "x2", "y.txt": "y1", "l.md": "y1"])
        #expect(try await b.tree() == tree)
        #expect(try a.core.attributes(try #require(a.inode("y.txt"))).nlink == 2)
        await a.shutdown()
        await b.shutdown()
    }

    /// A device whose delete of a folder waits for a held change (a link to the held file is
    /// in it), and whose new folder of that name waits behind it, pushes both only once a
    /// record brings the folder back (another device put a link in it): the folder under a
    /// free name, the new one at its name. That push follows a record of another device, so
    /// a device that synced in between sees it only at its next sync (seed
    /// 13932887830694767404, round 7, where that record was a long writer's held-back push).
    @Test func aFolderWhoseDeleteWaitsComesBackUnderAFreeNameWhenALinkLandsInIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        let c = try await TestDevice(store: store, name: "c")
        try await a.write("x.txt", "x1")
        try await a.write("y.txt", "y1")
        try a.mkdir("d")
        try a.link("x.txt", "d/x.txt")
        try await a.sync()
        try await b.sync()
        try await c.sync()
        // b holds x.txt open for writing; c's new version of it is held there.
        let writer = try await b.open(try #require(b.inode("x.txt")), flags: O_RDWR)
        try await c.write("x.txt", "x2")
        try await c.sync()
        try await b.sync()
        #expect(await b.engine.status().held?.count == 1)
        // b removes d (with its link to x.txt) and makes a new d: all of it waits.
        try b.remove("d/x.txt")
        try b.remove("d")
        try b.mkdir("d")
        try await b.sync()
        #expect(try await b.engine.heldBack().count == 3)
        try await a.sync()
        #expect(try await a.tree() == ["x.txt": "x2", "y.txt": "y1", "d": "/", "d/x.txt": "x2"], "nothing of d pushed")
        // a links y.txt into d; c syncs after a, then b, whose folder d comes back as d (2).
        try a.link("y.txt", "d/y.txt")
        try await a.sync()
        try await c.sync()
        try await b.sync()
        #expect(try await b.engine.heldBack().count == 1, "only the link to the held file still waits")
        #expect(try await b.tree() == ["x.txt": "x1", "y.txt": "y1", "d": "/", "d (2)": "/", "d (2)/y.txt": "y1"])
        #expect(try await c.tree()["d (2)"] == nil, "c synced before b's push")
        try await c.sync()
        try await a.sync()
        let tree = ["x.txt": "x2", "y.txt": "y1", "d": "/", "d (2)": "/", "d (2)/x.txt": "x2", "d (2)/y.txt": "y1"]
        #expect(try await c.tree() == tree)
        #expect(try await a.tree() == tree)
        // The writer closes: the link's delete goes out, and the three devices agree.
        b.core.release(handle: writer)
        try await b.sync()
        try await a.sync()
        try await c.sync()
        let final = try await b.tree()
        #expect(final == ["x.txt": "x2", "y.txt": "y1", "d": "/", "d (2)": "/", "d (2)/y.txt": "y1"])
        #expect(try await a.tree() == final)
        #expect(try await c.tree() == final)
        await a.shutdown()
        await b.shutdown()
        await c.shutdown()
    }
}
