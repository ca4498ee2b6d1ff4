import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Merging
import MetadataStore
@testable import SyncEngine
import Testing

/// Two devices make random line edits (replace, insert, delete) to one text file from the
/// version they shared; the oracle is `TextMerge`, itself checked against `git merge-file`
/// (`TextMergeTests`): where it merges, both devices end with exactly its result and this
/// device's edit among the versions; where it does not, with today's conflict copy. With
/// merging off (the control), every such pair is a copy. `UBIQFS_MERGE_SEED=N` replays one.
@Suite struct MergeRandomizedTests {
    static let seeds: [UInt64] = ProcessInfo.processInfo.environment["UBIQFS_MERGE_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...40)

    /// A random edit of 1 to 3 lines.
    static func edit(_ text: String, _ tag: String, _ rng: inout SplitMix64) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let at = Int.random(in: 0..<max(1, lines.count - 1), using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: lines[at] = "\(tag) \(at)"
            case 1: lines.insert("\(tag) new \(at)", at: at)
            default: if lines.count > 2 { lines.remove(at: at) }
            }
        }
        return lines.joined(separator: "\n")
    }

    @Test(arguments: seeds) func randomEditsMergeAsTheOracleSays(seed: UInt64) async throws {
        for merging in [true, false] {
            var rng = SplitMix64(seed: seed)
            let store = InMemoryStore()
            let a = try await TestDevice(store: store, name: "a")
            let b = try await TestDevice(store: store, name: "b")
            if !merging { _ = try await a.engine.setMerge(["text": false]) }
            let base = (0..<Int.random(in: 3...40, using: &rng)).map { "line \($0)\n" }.joined()
            try await a.write("f.txt", base)
            try await a.sync()
            try await b.sync()
            let theirs = Self.edit(base, "A", &rng)
            let ours = Self.edit(base, "B", &rng)
            try await a.write("f.txt", theirs)
            try await a.sync()
            try await b.write("f.txt", ours)
            try await b.sync()
            try await a.sync()
            let (treeA, treeB) = (try await a.tree(), try await b.tree())
            let context = "seed \(seed), merging \(merging): base \(base.debugDescription) ours \(ours.debugDescription) theirs \(theirs.debugDescription)"
            #expect(treeA == treeB, "\(context)")
            let oracle = TextMerge.merge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)).map { String(decoding: $0, as: UTF8.self) }
            if merging, let oracle {
                #expect(treeB == ["f.txt": oracle], "\(context): \(treeB)")
                let versions = try b.core.versions(try #require(b.inode("f.txt"))).versions
                #expect(versions.contains { $0.input == 1 && $0.size == Int64(ours.utf8.count) }, "\(context)")
            } else {
                #expect(treeB.count == 2 && treeB["f.txt"] == theirs && treeB.values.contains(ours), "\(context): \(treeB)")
            }
            await a.shutdown()
            await b.shutdown()
        }
    }
}
