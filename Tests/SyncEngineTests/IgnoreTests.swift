import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import Testing

/// Items that stay on this device (docs/SEMANTICS.md, "Items that stay on this device"):
/// `.nosync` names, `.ubiqfsignore` patterns and `user.ubiqfs.ignored`. Each rule has a test
/// here, and every test looks for the ignored names in the store's every object.
@Suite struct IgnoreTests {
    /// The keys of the objects whose bytes hold `text` (records keep names as JSON strings).
    static func objects(in store: InMemoryStore, mentioning text: String) async throws -> [String] {
        var found: [String] = []
        for key in try await store.listAll(prefix: "") {
            let bytes = try await store.get(key, range: nil)
            if bytes.count >= text.utf8.count, String(decoding: bytes, as: UTF8.self).contains(text) { found.append(key) }
        }
        return found
    }

    /// The code of the error `body` throws (nil if none).
    static func code(_ body: () throws -> Void) -> FileSystemErrorCode? {
        do {
            try body()
            return nil
        } catch let error as FileSystemError {
            return error.code
        } catch {
            return nil
        }
    }

    static func state(_ device: TestDevice, _ path: String) throws -> String {
        String(decoding: try device.core.getXattr(try #require(device.inode(path)), name: Array("user.ubiqfs.state".utf8)), as: UTF8.self)
    }

    static func pending(_ device: TestDevice) async throws -> Int {
        try await device.metadata.read { db in try ItemRow.dirtyRows(db).count }
    }

    static func setIgnored(_ device: TestDevice, _ path: String, _ on: Bool) throws {
        try device.core.setXattr(try #require(device.inode(path)), name: Array("user.ubiqfs.ignored".utf8), value: on ? [49] : [48], flags: 0)
    }

    /// A `.nosync` folder and what is in it stay here: never pushed, never pending, and no
    /// object of the store names them; the checker finds a synced name (its control).
    @Test func aNosyncFolderNeverReachesTheStore() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("build.nosync")
        try await a.write("build.nosync/secret-output.o", "object code")
        try await a.write("keep-this-name.txt", "synced")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["keep-this-name.txt": "synced"])
        #expect(try await Self.objects(in: store, mentioning: "secret-output").isEmpty)
        #expect(try await Self.objects(in: store, mentioning: "build.nosync").isEmpty)
        #expect(try await !Self.objects(in: store, mentioning: "keep-this-name").isEmpty)
        #expect(try Self.state(a, "build.nosync/secret-output.o") == "ignored")
        #expect(try Self.state(a, "keep-this-name.txt") == "local")
        #expect(try await Self.pending(a) == 0)
        #expect(await a.engine.status().ignoredItems == 2)
        #expect(try await a.read("build.nosync/secret-output.o") == "object code")
        // Not even the top's time moves for the others: nothing to commit at all.
        let records = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        try await a.write("more.nosync", "x")
        try a.mkdir("cache.nosync")
        try await a.sync()
        #expect(try await store.listAll(prefix: ContainerLayout.journalPrefix).count == records)
        for device in [a, b] { await device.shutdown() }
    }

    /// `.ubiqfsignore` patterns apply to their folder and below, and the file itself syncs.
    @Test func patternsKeepBuildOutputHere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("src")
        try await a.write(".ubiqfsignore", "*.o\nbuild/\n!keep.o\n")
        try await a.write("src/.ubiqfsignore", "*.tmp\n")
        try a.mkdir("src/build")
        try await a.write("src/build/out.bin", "x")
        try await a.write("src/a.o", "x")
        try await a.write("src/keep.o", "kept")
        try await a.write("src/a.c", "int a;")
        try await a.write("src/x.tmp", "x")
        try await a.write("x.tmp", "top")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == [
            ".ubiqfsignore": "*.o\nbuild/\n!keep.o\n", "src": "/", "src/.ubiqfsignore": "*.tmp\n",
            "src/a.c": "int a;", "src/keep.o": "kept", "x.tmp": "top",
        ])
        #expect(try await Self.objects(in: store, mentioning: "out.bin").isEmpty)
        #expect(await a.engine.status().ignoredItems == 4)
        // Its rules gone, what they kept here is uploaded as new.
        try a.remove("src/.ubiqfsignore")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("src/x.tmp") == "x")
        #expect(await a.engine.status().ignoredItems == 3)
        for device in [a, b] { await device.shutdown() }
    }

    /// The attribute takes a synced folder out of the container (a delete there, whose
    /// trash keeps it) and keeps it here; cleared, the folder comes back as new.
    @Test func anItemThatBecomesIgnoredLeavesTheOthersAndComesBackWhenCleared() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("notes")
        try await a.write("notes/draft.txt", "words")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["notes": "/", "notes/draft.txt": "words"])
        try Self.setIgnored(a, "notes", true)
        #expect(try Self.state(a, "notes/draft.txt") == "ignored")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == [:])
        #expect(try b.core.trash().contains { $0.items.first?.name == ByteString(Array("notes".utf8)) })
        #expect(try await a.tree() == ["notes": "/", "notes/draft.txt": "words"])
        #expect(try await Self.pending(a) == 0)
        try Self.setIgnored(a, "notes", false)
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["notes": "/", "notes/draft.txt": "words"])
        #expect(try Self.state(a, "notes/draft.txt") == "local")
        for device in [a, b] { await device.shutdown() }
    }

    /// A rename into an ignored name is a delete there; out of it, a new item there. A safe
    /// save from an ignored temporary file keeps the original's identity.
    @Test func renamesAcrossTheLineAndASafeSaveThroughAnIgnoredFile() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write(".ubiqfsignore", "*.swp\n")
        try await a.write("a.txt", "one")
        try await a.write("doc.txt", "v1")
        try await a.sync()
        try await b.sync()
        let doc = try #require(b.inode("doc.txt"))
        let id = try #require(try await b.metadata.read { db in try ItemRow.find(ino: doc, db) }).itemID
        try a.rename("a.txt", "a.txt.nosync")
        try await a.write("doc.txt.swp", "v2")
        try a.rename("doc.txt.swp", "doc.txt")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == [".ubiqfsignore": "*.swp\n", "doc.txt": "v2"])
        let docAfter = try #require(b.inode("doc.txt"))
        let after = try await b.metadata.read { db in try ItemRow.find(ino: docAfter, db) }
        #expect(after?.itemID == id)
        try a.rename("a.txt.nosync", "b.txt")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == [".ubiqfsignore": "*.swp\n", "b.txt": "one", "doc.txt": "v2"])
        // A folder moved across the line takes what is in it along, both ways.
        try a.mkdir("dir")
        try await a.write("dir/f", "in a folder")
        try await a.sync()
        try await b.sync()
        try a.rename("dir", "dir.nosync")
        #expect(try Self.state(a, "dir.nosync/f") == "ignored")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree()["dir/f"] == nil)
        try a.rename("dir.nosync", "back")
        #expect(try Self.state(a, "back/f") != "ignored")
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("back/f") == "in a folder")
        for device in [a, b] { await device.shutdown() }
    }

    /// What cannot cross the line fails as across filesystems (`mv` and `cp` then copy):
    /// a placeholder (its only copy would not be here), another name of a file.
    @Test func placeholdersAndLinksDoNotCrossTheLine() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("big.bin", "remote content")
        try await a.sync()
        try await b.sync()
        #expect(Self.code { try b.rename("big.bin", "big.bin.nosync") } == .crossDevice)
        #expect(Self.code { try Self.setIgnored(b, "big.bin", true) } == .busy)
        try await a.write("f", "x")
        #expect(Self.code { try a.link("f", "f.nosync") } == .crossDevice)
        try a.link("f", "g")
        #expect(Self.code { try a.rename("g", "g.nosync") } == .crossDevice)
        // An ignored file has its only copy here: evict refuses it.
        try await a.write("h.nosync", "only here")
        let onlyCopy = try #require(a.inode("h.nosync"))
        #expect(Self.code { try a.core.setXattr(onlyCopy, name: Array("user.ubiqfs.evict".utf8), value: [49], flags: 0) } == .notPermitted)
        for device in [a, b] { await device.shutdown() }
    }

    /// Another device deletes a folder holding ignored items here: they stay, and so does
    /// the folder, ignored from then on; nothing is pushed back.
    @Test func aFolderDeletedThereKeepsTheIgnoredItemsHere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write(".ubiqfsignore", "node_modules/\n")
        try a.mkdir("proj")
        try await a.write("proj/main.c", "int main;")
        try a.mkdir("proj/node_modules")
        try await a.write("proj/node_modules/m.js", "module")
        try await a.sync()
        try await b.sync()
        try b.remove("proj/main.c")
        try b.remove("proj")
        try await b.sync()
        try await a.sync()
        try await b.sync()
        #expect(try await a.tree() == [".ubiqfsignore": "node_modules/\n", "proj": "/", "proj/node_modules": "/", "proj/node_modules/m.js": "module"])
        #expect(try Self.state(a, "proj") == "ignored")
        #expect(try await b.tree() == [".ubiqfsignore": "node_modules/\n"])
        #expect(try await Self.pending(a) == 0)
        for device in [a, b] { await device.shutdown() }
    }

    /// A remote item arriving under an ignored item's name: the ignored one steps aside
    /// here, keeps its content and stays ignored; nothing of it is pushed.
    @Test func aRemoteItemNeverOverwritesAnIgnoredOne() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("cache")
        try await a.write("cache/local-only", "mine")
        try Self.setIgnored(a, "cache", true)
        try await a.sync()
        try b.mkdir("cache")
        try await b.write("cache/shared", "theirs")
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == ["cache": "/", "cache/shared": "theirs", "cache (2)": "/", "cache (2)/local-only": "mine"])
        #expect(try Self.state(a, "cache (2)/local-only") == "ignored")
        #expect(try await Self.objects(in: store, mentioning: "local-only").isEmpty)
        #expect(try await Self.pending(a) == 0)
        for device in [a, b] { await device.shutdown() }
    }

    /// A `.ubiqfsignore` written on one device applies on the other once its content is
    /// there: to what that device creates next, and to what it had (which then leaves the
    /// container), while a placeholder a rule matches stays a synced item.
    @Test func aRuleFileWrittenThereAppliesHere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("data")
        try await a.write("data/a.log", "a's log")
        try await a.sync()
        try await b.sync()
        try await b.write("local.log", "b's log")
        try await b.sync()
        try await a.sync()
        try await a.write(".ubiqfsignore", "*.log\n")
        #expect(try Self.state(a, "data/a.log") == "ignored")
        #expect(try Self.state(a, "local.log") == "placeholder")
        try await a.sync()
        try await b.sync()
        var state = ""
        for _ in 0..<500 {
            state = try Self.state(b, "local.log")
            if state == "ignored" { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(state == "ignored")
        try await b.write("data/new.log", "new")
        #expect(try Self.state(b, "data/new.log") == "ignored")
        try await b.sync()
        try await a.sync()
        #expect(try await a.tree() == [".ubiqfsignore": "*.log\n", "data": "/", "data/a.log": "a's log"])
        #expect(try await b.tree() == [".ubiqfsignore": "*.log\n", "data": "/", "data/new.log": "new", "local.log": "b's log"])
        #expect(try await Self.objects(in: store, mentioning: "new.log").isEmpty)
        for device in [a, b] {
            #expect(try await Self.pending(device) == 0)
            await device.shutdown()
        }
    }


    /// After a crash: an ignored file whose cache file is gone comes back empty (its only
    /// copy was here; a placeholder could never be filled), and one whose size moved is
    /// no change to push.
    @Test func afterACrashAnIgnoredFileIsNeverAPlaceholder() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("gone.nosync", "only here")
        try await a.write("grown.nosync", "grows")
        let (gone, grown) = (try #require(a.inode("gone.nosync")), try #require(a.inode("grown.nosync")))
        await a.shutdown()
        #expect(unlink(a.cache.path(for: gone)) == 0)
        let handle = try #require(FileHandle(forWritingAtPath: a.cache.path(for: grown)))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(" more".utf8))
        try handle.close()
        let again = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        let row = try await again.metadata.read { db in try ItemRow.find(ino: gone, db) }
        #expect(row?.contentState == .local && row?.isIgnored == true)
        #expect(try await again.read("gone.nosync") == "")
        #expect(try await again.read("grown.nosync") == "grows more")
        #expect(try await Self.pending(again) == 0)
        await again.shutdown()
    }


    /// `ubiqfs reset` keeps ignored items (their only copy is here): they do not block it,
    /// and the next start puts them back, ignored, at their places among the container's
    /// items once it has pulled; still nothing of them reaches the store.
    @Test func ignoredItemsSurviveAReset() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write(".ubiqfsignore", "build/\n")
        try a.mkdir("proj")
        try await a.write("proj/main.c", "int main;")
        try a.mkdir("proj/build")
        try await a.write("proj/build/kept-output.bin", "output")
        try a.mkdir("cache.nosync")
        try await a.write("cache.nosync/kept-scratch", "scratch")
        try a.mkdir("tmpdir")
        try await a.write("tmpdir/kept-tmp", "t")
        try Self.setIgnored(a, "tmpdir", true)
        try await a.sync()
        try await a.cleanStop()
        let blockers = try LocalStateReset.blockers(stateDir: a.stateDir)
        #expect(blockers.isEmpty)
        #expect(try KeptIgnoredItems.save(stateDir: a.stateDir) == 6)
        _ = try LocalStateReset.clear(stateDir: a.stateDir)
        // Meanwhile another device syncs a folder of that name: the kept one steps aside.
        let b = try await TestDevice(store: store, name: "b")
        try b.mkdir("tmpdir")
        try await b.write("tmpdir/from-b", "b")
        try await b.sync()
        let again = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        try KeptIgnoredItems.restore(stateDir: a.stateDir, core: again.core, logger: Logger(label: "test"))
        #expect(try await again.tree() == [
            ".ubiqfsignore": "build/\n", "proj": "/", "proj/main.c": "int main;", "proj/build": "/",
            "proj/build/kept-output.bin": "output", "cache.nosync": "/", "cache.nosync/kept-scratch": "scratch",
            "tmpdir": "/", "tmpdir/from-b": "b", "tmpdir (2)": "/", "tmpdir (2)/kept-tmp": "t",
        ])
        await b.shutdown()
        #expect(try Self.state(again, "proj/build/kept-output.bin") == "ignored")
        #expect(try Self.state(again, "proj/main.c") != "ignored")
        try await again.sync()
        #expect(try await Self.pending(again) == 0)
        #expect(try await Self.objects(in: store, mentioning: "kept-").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: a.stateDir + "/kept/"))
        await again.shutdown()
    }


    /// The cache budget passes over an ignored file (its only copy), even past its limit.
    @Test func theCacheBudgetNeverEvictsAnIgnoredFile() async throws {
        let a = try await TestDevice(store: InMemoryStore(), name: "a")
        try await a.write("synced.txt", "in the store too")
        try await a.write("kept.nosync", "only here")
        try await a.sync()
        let budget = CacheBudget(core: a.core, limit: 0, logger: Logger(label: "test"))
        #expect(budget.enforce() == 1)
        #expect(try Self.state(a, "synced.txt") == "placeholder")
        #expect(try await a.read("kept.nosync") == "only here")
        #expect(try Self.state(a, "kept.nosync") == "ignored")
        await a.shutdown()
    }

}
