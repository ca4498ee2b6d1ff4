import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// Two devices edit one text file from the version they shared (issue 40): edits on lines
/// apart merge into the file on both, with no conflict copy, and every edit is a version;
/// anything else keeps today's conflict copy, and says why.
@Suite struct MergeTests {
    static let base = (1...8).map { "line \($0)\n" }.joined()

    /// `notes.md` = `base` on a and b, both in sync.
    static func devices(_ store: InMemoryStore, configuration: SyncConfiguration = SyncConfiguration()) async throws -> (TestDevice, TestDevice) {
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        let b = try await TestDevice(store: store, name: "b", configuration: configuration)
        try await a.write("notes.md", base)
        try await a.sync()
        try await b.sync()
        #expect(try await b.read("notes.md") == base)
        return (a, b)
    }

    static func replacing(_ line: Int, with text: String, in content: String = base) -> String {
        var lines = content.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[line - 1] = text
        return lines.joined(separator: "\n")
    }

    static func versions(_ device: TestDevice, _ path: String) throws -> [FileVersion] {
        try device.core.versions(try #require(device.inode(path))).versions
    }

    @Test func editsOnLinesApartMergeOnEveryDeviceAndEveryEditIsAVersion() async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        let theirs = Self.replacing(2, with: "line 2, from a")
        let ours = Self.replacing(7, with: "line 7, from b")
        try await a.write("notes.md", theirs)
        try await a.sync()
        try await b.write("notes.md", ours)
        try await b.sync()
        let merged = Self.replacing(7, with: "line 7, from b", in: theirs)
        #expect(try await b.read("notes.md") == merged)
        #expect(try await b.tree().keys.sorted() == ["notes.md"])
        try await a.sync()
        #expect(try await a.read("notes.md") == merged)
        #expect(try await a.tree() == b.tree())
        let status = await b.engine.status()
        #expect(status.merges?.count == 1 && status.merges?.first?.contains("notes.md: merged with a's version") == true, "\(String(describing: status.merges))")
        #expect(status.conflicts.isEmpty && status.held?.isEmpty != false)
        // Versions: the merge, b's own edit as its input, a's version, the base; the same on both.
        for device in [a, b] {
            let versions = try Self.versions(device, "notes.md")
            #expect(versions.map(\.input) == [0, 1, 0, 0], "\(versions.map(\.name))")
            #expect(versions[0].mergedWith == versions[2].seq && versions[0].mergeKind == "text")
            #expect(versions[1].device == "b" && versions[1].size == Int64(ours.utf8.count) && versions[2].device == "a")
        }
        let input = try Self.versions(a, "notes.md")[1]
        try await a.core.restore(try #require(a.inode("notes.md")), version: input.seq, input: 1)
        #expect(try await a.read("notes.md") == ours)
        await a.shutdown()
        await b.shutdown()
    }

    /// Edits of the same line, binary content, merging turned off: a conflict copy, as
    /// before merges, with the reason when a merge was tried.
    @Test(arguments: [
        ("same line", Self.replacing(4, with: "line 4, from a"), Self.replacing(4, with: "line 4, from b"), true, "(not merged: both changed the same lines)"),
        ("adjacent lines", Self.replacing(4, with: "line 4, from a"), Self.replacing(5, with: "line 5, from b"), true, "(not merged: both changed the same lines)"),
        ("binary", Self.replacing(2, with: "line 2, from a"), Self.replacing(7, with: "line 7\u{0}"), true, "(not merged: not text)"),
        ("merging off", Self.replacing(2, with: "line 2, from a"), Self.replacing(7, with: "line 7, from b"), false, "this device's version is now"),
    ])
    func editsThatCannotMergeKeepBothAsACopy(what: String, theirs: String, ours: String, merging: Bool, says: String) async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        if !merging { _ = try await a.engine.setMerge(["text": false]) }
        try await b.sync()
        try await a.write("notes.md", theirs)
        try await a.sync()
        try await b.write("notes.md", ours)
        try await b.sync()
        #expect(try await b.read("notes.md") == theirs, "\(what)")
        let tree = try await b.tree()
        #expect(tree.count == 2 && tree.values.contains(ours), "\(what): \(tree)")
        let conflicts = await b.engine.status().conflicts
        #expect(conflicts.count == 1 && conflicts[0].contains(says), "\(what): \(conflicts)")
        if !merging { #expect(!conflicts[0].contains("not merged")) }
        #expect(await b.engine.status().merges == nil)
        try await a.sync()
        #expect(try await a.tree() == tree)
        await a.shutdown()
        await b.shutdown()
    }

    /// Both devices made the same edit (text or not): one file, no copy, whatever the
    /// kind; with merging off (the control), the copy as before.
    @Test(arguments: [true, false]) func theSameEditOnBothSidesIsNoConflict(merging: Bool) async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        if !merging { _ = try await a.engine.setMerge(["text": false]) }
        try await b.sync()
        let same = Array(Self.base.utf8) + [0, 1, 2]
        try await a.write("notes.md", same)
        try await a.sync()
        try await b.write("notes.md", same)
        try await b.sync()
        try await a.sync()
        let (treeA, treeB) = (try await a.tree(), try await b.tree())
        #expect(treeB.count == (merging ? 1 : 2) && treeA == treeB, "\(treeB.keys.sorted())")
        #expect(try await b.readBytes("notes.md") == same)
        #expect(await b.engine.status().merges?.count == (merging ? 1 : nil))
        await a.shutdown()
        await b.shutdown()
    }

    /// A program writing the file here when the other version arrives: no merge under it
    /// (the copy, as before), and the program keeps its file.
    /// Text merges in memory, up to 8 MiB a side: lines a appended that take its version
    /// just over it keep the copy and say why; just under it they merge (the control).
    @Test(arguments: [((8 << 20) - 1024, true), (8 << 20, false)])
    func aSideOverEightMiBKeepsTheCopy(appended: Int, merges: Bool) async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        let line = String(repeating: "x", count: 63) + "\n"
        let theirs = Self.base + String(repeating: line, count: appended / line.utf8.count)
        try await a.write("notes.md", theirs)
        try await a.sync()
        try await b.write("notes.md", Self.replacing(7, with: "line 7, from b"))
        try await b.sync()
        let conflicts = await b.engine.status().conflicts
        if merges {
            let merged = try await b.read("notes.md")
            #expect(conflicts.isEmpty && merged == Self.replacing(7, with: "line 7, from b", in: theirs), "\(conflicts)")
        } else {
            #expect(conflicts.count == 1 && conflicts[0].contains("(not merged: larger than 8 MiB)"), "\(conflicts)")
            #expect(try await b.tree().keys.count == 2)
        }
        for device in [a, b] { await device.shutdown() }
    }

    @Test func aFileBeingWrittenIsNeverMergedUnderItsWriter() async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        try await a.write("notes.md", Self.replacing(2, with: "line 2, from a"))
        try await a.sync()
        let ino = try #require(b.inode("notes.md"))
        let handle = try await b.open(ino, flags: O_WRONLY)
        let ours = Array(Self.replacing(7, with: "line 7, from b").utf8)
        _ = try await b.core.write(handle: handle, bytes: ours, offset: 0)
        try await b.sync()
        #expect(await b.engine.status().merges == nil)
        b.core.release(handle: handle)
        try await b.sync()
        #expect(try await b.tree().count == 2)
        await a.shutdown()
        await b.shutdown()
    }

    /// A git repository's own files never merge: git reconciles them, not lines.
    @Test func filesInsideAGitFolderKeepTheCopy() async throws {
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store)
        try a.mkdir("repo")
        try a.mkdir("repo/.git")
        try await a.write("repo/.git/packed-refs", Self.base)
        try await a.sync()
        try await b.sync()
        try await a.write("repo/.git/packed-refs", Self.replacing(2, with: "line 2, from a"))
        try await a.sync()
        try await b.write("repo/.git/packed-refs", Self.replacing(7, with: "line 7, from b"))
        try await b.sync()
        #expect(try await b.tree().keys.filter { $0.hasPrefix("repo/.git/packed-refs (conflict from b ") }.count == 1)
        #expect(await b.engine.status().merges == nil)
        await a.shutdown()
        await b.shutdown()
    }

    /// A container of an older format does not merge (its devices could not keep the edit).
    @Test func anOlderFormatKeepsTheCopy() async throws {
        var old = SyncConfiguration()
        old.newestFormat = 3
        let store = InMemoryStore()
        let (a, b) = try await Self.devices(store, configuration: old)
        try await a.write("notes.md", Self.replacing(2, with: "line 2, from a"))
        try await a.sync()
        try await b.write("notes.md", Self.replacing(7, with: "line 7, from b"))
        try await b.sync()
        #expect(try await b.tree().count == 2)
        #expect(await b.engine.status().merges == nil)
        await a.shutdown()
        await b.shutdown()
    }
}
