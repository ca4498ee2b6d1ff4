import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Merging
import MetadataStore
@testable import SyncEngine
import Testing

/// A merge cut short by a crash at each of its steps (issue 40): after a restart it ends as
/// an uninterrupted one does, the edit made here kept exactly once as an input, never the
/// merge's own result taken for an edit, and no conflict copy.
@Suite struct MergeRestartTests {
    static let theirs = MergeTests.replacing(2, with: "line 2, from a")
    static let ours = MergeTests.replacing(7, with: "line 7, from b")
    static let merged = MergeTests.replacing(7, with: "line 7, from b", in: theirs)

    enum Cut: String, CaseIterable { case beforeAnyStep, afterTheEditWasKept, afterTheResultWasInstalled }

    @Test(arguments: Cut.allCases)
    func aMergeCutShortFinishesAfterARestart(cut: Cut) async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: link, name: "b")
        let change = try await Self.heldMerge(a, b, link: link)
        if cut != .beforeAnyStep { try await keepEdit(b, change: change) }
        if cut == .afterTheResultWasInstalled { try await b.write("notes.md", Self.merged) }
        // The crash: nothing more reaches the store.
        link.faults = try StoreFaults(parsing: "errors=1")
        await b.shutdown()

        let restarted = try await TestDevice(store: store, name: "b", stateDir: b.stateDir)
        try await restarted.sync()
        try await a.sync()
        for device in [a, restarted] {
            let tree = try await device.tree()
            #expect(tree == ["notes.md": Self.merged], "\(cut) on \(device.name): \(tree)")
            let versions = try MergeTests.versions(device, "notes.md")
            #expect(versions.map(\.input) == [0, 1, 0, 0], "\(cut): \(versions.map(\.name))")
            #expect(versions[0].mergedWith == change.seq && versions[1].device == "b")
        }
        // The input is the edit, not the merge: restored, it is b's own text.
        let input = try MergeTests.versions(a, "notes.md")[1]
        try await a.core.restore(try #require(a.inode("notes.md")), version: input.seq, input: 1)
        #expect(try await a.read("notes.md") == Self.ours, "\(cut)")
        #expect(await restarted.engine.status().merges?.count == 1)
        await a.shutdown()
        await restarted.shutdown()
    }

    /// a and b share `notes.md`; a's edit is committed, and b's pull holds it for a merge
    /// with b's edit, which waits: `link`, b's store, fails block reads meanwhile.
    static func heldMerge(_ a: TestDevice, _ b: TestDevice, link: FaultyStore) async throws -> HeldChange {
        try await a.write("notes.md", MergeTests.base)
        try await a.sync()
        try await b.sync()
        try await a.write("notes.md", theirs)
        try await a.sync()
        try await b.write("notes.md", ours)
        link.faults = try StoreFaults(parsing: "errors=1,blocks")
        try? await b.sync()
        link.faults = StoreFaults()
        let change = try #require(await b.engine.held.values.first, "nothing held")
        let content = try await b.read("notes.md")
        #expect(change.isMerge && content == ours)
        #expect(try await b.tree().keys.sorted() == ["notes.md"])
        return change
    }

    /// The merge's first step, as `SyncEngine.settleMerges` takes it: the edit stored and
    /// named by a durable pending merge, with the hash of the result.
    func keepEdit(_ device: TestDevice, change: HeldChange) async throws {
        let ino = try #require(device.inode("notes.md"))
        let row = try await device.metadata.read { db in try ItemRow.find(ino: ino, db) }
        let generation = await device.engine.activity.writeGeneration(ino)
        let merged = try TextMerge.merged(base: Array(MergeTests.base.utf8), ours: Array(Self.ours.utf8), theirs: Array(Self.theirs.utf8))
        #expect(merged == Array(Self.merged.utf8))
        let note = try await device.engine.keepInput(
            try #require(row), ours: Array(Self.ours.utf8), generation: generation, change: change, pending: nil, merged: (merged, .text)
        )
        #expect(note?.inputs.count == 1)
    }
}
