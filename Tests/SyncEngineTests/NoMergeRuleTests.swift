import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// `.ubiqfsnomerge` files turn merging off for the files they name (issue 40, "whose
/// choice"): those keep the conflict copy, which says why; the files beside them merge.
@Suite struct NoMergeRuleTests {
    /// a and b share `rules` in `ruleFolder` and `base` in each of `paths`; a edits line 2
    /// of each, b line 7, b syncs last. What b has then.
    static func edit(_ paths: [String], folders: [String], rule: (folder: String, contents: String)?) async throws -> (tree: [String: String], conflicts: [String], merges: [String]) {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        for folder in folders { try a.mkdir(folder) }
        if let rule { try await a.write(rule.folder.isEmpty ? ".ubiqfsnomerge" : "\(rule.folder)/.ubiqfsnomerge", rule.contents) }
        for path in paths { try await a.write(path, MergeTests.base) }
        try await a.sync()
        try await b.sync()
        for path in paths {
            try await a.write(path, MergeTests.replacing(2, with: "line 2, from a"))
            try await b.write(path, MergeTests.replacing(7, with: "line 7, from b"))
        }
        try await a.sync()
        try await b.sync()
        let result = (try await b.tree(), await b.engine.status().conflicts, await b.engine.status().merges ?? [])
        try await a.sync()
        #expect(try await a.tree() == result.0)
        await a.shutdown()
        await b.shutdown()
        return result
    }

    static let merged = MergeTests.replacing(7, with: "line 7, from b", in: MergeTests.replacing(2, with: "line 2, from a"))

    @Test func aRuleInAFolderKeepsTheCopyForItsTreeAndTheFilesBesideMerge() async throws {
        // The rule file is a placeholder on b (never read there): it is fetched to be read.
        let paths = ["notes.md", "code/main.c", "code/lib/util.c"]
        let result = try await Self.edit(paths, folders: ["code", "code/lib"], rule: ("code", ""))
        #expect(result.tree["notes.md"] == Self.merged)
        for path in paths.dropFirst() {
            #expect(result.tree[path] == MergeTests.replacing(2, with: "line 2, from a"), "\(path)")
            let copies = result.tree.filter { $0.key.hasPrefix(String(path.dropLast(2)) + " (conflict from b") }
            #expect(copies.values.elementsEqual([MergeTests.replacing(7, with: "line 7, from b")]), "\(path): \(result.tree.keys.sorted())")
        }
        #expect(result.conflicts.count == 2 && result.conflicts.allSatisfy { $0.contains("(not merged: merging is off for it: \"*\" in /code/.ubiqfsnomerge)") }, "\(result.conflicts)")
        #expect(result.merges.count == 1)
    }

    @Test func patternsAndNegationChooseFiles() async throws {
        let paths = ["data.csv", "todo.txt", "journal.md"]
        let result = try await Self.edit(paths, folders: [], rule: ("", "*\n!todo.txt\n"))
        #expect(result.tree["todo.txt"] == Self.merged && result.tree.count == 6, "\(result.tree.keys.sorted())")
        #expect(result.conflicts.count == 2 && result.merges.count == 1)
        // The control: with no rule file, all three merge.
        let control = try await Self.edit(paths, folders: [], rule: nil)
        #expect(paths.allSatisfy { control.tree[$0] == Self.merged } && control.conflicts.isEmpty && control.merges.count == 3)
    }

    /// A rule file too large to read keeps the copy (safe: no merge is the old rule), and says so.
    @Test func aRuleFileTooLargeToReadKeepsTheCopy() async throws {
        let large = "#" + String(repeating: " a comment", count: Int(SyncEngine.largestRuleFile) / 10 + 1)
        let result = try await Self.edit(["notes.md"], folders: [], rule: ("", large))
        #expect(result.tree["notes.md"] == MergeTests.replacing(2, with: "line 2, from a") && result.merges.isEmpty)
        #expect(result.conflicts.count == 1 && result.conflicts[0].contains("(not merged: .ubiqfsnomerge of / is too large to read)"), "\(result.conflicts)")
    }
}
