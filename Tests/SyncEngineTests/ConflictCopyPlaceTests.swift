import ContainerStore
import DeviceFixture
import Foundation
import Testing

/// Where a conflict copy goes (docs/CONTAINER-FORMAT.md, "Both devices changed a file's
/// content"): beside the committed version, not into the folder the item left on the other
/// device, which that device may have deleted since (randomized seed 7056112004840374108,
/// round 5, reduced).
@Suite struct ConflictCopyPlaceTests {
    /// b moves x out of F, edits it and removes F (empty there); a edits x where it was.
    @Test func theConflictCopyOfAMovedFileDoesNotBringBackTheFolderItLeft() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("F"); try a.mkdir("G")
        try await a.write("F/x.txt", "base")
        try await a.sync(); try await b.sync()
        try b.rename("F/x.txt", "G/x.txt")
        try await b.write("G/x.txt", "from b")
        try b.remove("F")
        try await b.sync()
        try await a.write("F/x.txt", "from a")
        try await a.sync()                      // main: the copy stays in F, F comes back
        try await b.sync(); try await a.sync()
        for device in [a, b] {
            let tree = try await device.tree()
            #expect(tree["F"] == nil, "F was deleted by b, and a put nothing in it: \(tree)")
            #expect(tree["G/x.txt"] == "from b")
            let copy = try #require(tree.keys.first { $0.hasPrefix("G/x (conflict from a ") && $0.hasSuffix(").txt") }, "\(tree)")
            #expect(tree[copy] == "from a")
            // The original lists its copy (XATTRS.md: copies in the same folder).
            let listed = try device.core.getXattr(try #require(device.inode("G/x.txt")), name: Array("user.ubiqfs.conflicts".utf8))
            #expect("G/" + String(decoding: listed, as: UTF8.self) == copy)
        }
        #expect(try await a.tree() == b.tree())
        for device in [a, b] { await device.shutdown() }
    }

    /// As in the seed: a edits the item through another name (a link at the top), so it
    /// never even names F.
    @Test func anEditThroughALinkDoesNotBringBackTheFolderTheItemLeft() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("F"); try a.mkdir("G")
        try await a.write("F/x.txt", "base")
        try a.link("F/x.txt", "c.md")
        try await a.sync(); try await b.sync()
        try b.rename("F/x.txt", "G/x.txt")
        try await b.write("c.md", "from b")
        try b.remove("F")
        try await b.sync()
        try await a.write("c.md", "from a")
        try await a.sync()
        try await b.sync(); try await a.sync()
        for device in [a, b] {
            let tree = try await device.tree()
            #expect(tree["F"] == nil, "F was deleted by b, and a put nothing in it: \(tree)")
            #expect(tree["G/x.txt"] == "from b" && tree["c.md"] == "from b", "\(tree)")
            #expect(tree.filter { $0.key.hasPrefix("G/x (conflict from a ") }.values.first == "from a", "\(tree)")
        }
        #expect(try await a.tree() == b.tree())
        for device in [a, b] { await device.shutdown() }
    }

    /// The branch that does not change: a moved the file itself, so its place wins the
    /// merge and its copy stays there; the committed version goes where b has it.
    @Test func aCopyOfAFileMovedHereStaysWhereItWasMoved() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("F"); try a.mkdir("H")
        try await a.write("F/x.txt", "base")
        try await a.sync(); try await b.sync()
        try await b.write("F/x.txt", "from b")
        try await b.sync()
        try a.rename("F/x.txt", "H/y.txt")
        try await a.write("H/y.txt", "from a")
        try await a.sync(); try await b.sync(); try await a.sync()
        for device in [a, b] {
            let tree = try await device.tree()
            #expect(tree["F/x.txt"] == "from b", "\(tree)")
            #expect(tree.filter { $0.key.hasPrefix("H/y (conflict from a ") }.values.first == "from a", "\(tree)")
        }
        #expect(try await a.tree() == b.tree())
        for device in [a, b] { await device.shutdown() }
    }
}
