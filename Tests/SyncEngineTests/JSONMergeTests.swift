import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// JSON files (by name) merge only with JSON merging on, line by line as text, and only into
/// valid JSON (issue 40); off, which is the default, they keep the conflict copy.
@Suite struct JSONMergeTests {
    static let base = "{\n  \"theme\": \"light\",\n  \"font\": 12,\n  \"width\": 80,\n  \"wrap\": true\n}\n"
    static let theirs = base.replacingOccurrences(of: "\"light\"", with: "\"dark\"")
    static let ours = base.replacingOccurrences(of: "true", with: "false")

    static func edit(json: Bool) async throws -> (tree: [String: String], conflicts: [String]) {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        if json { _ = try await a.engine.setMerge(["json": true]) }
        try await a.write("settings.json", base)
        try await a.sync()
        try await b.sync()
        try await a.write("settings.json", theirs)
        try await a.sync()
        try await b.write("settings.json", ours)
        try await b.sync()
        let result = (try await b.tree(), await b.engine.status().conflicts)
        await a.shutdown()
        await b.shutdown()
        return result
    }

    @Test func settingsEditedOnTwoDevicesMergeWithJSONMergingOnAndOnlyThen() async throws {
        let on = try await Self.edit(json: true)
        #expect(on.tree == ["settings.json": Self.theirs.replacingOccurrences(of: "true", with: "false")] && on.conflicts.isEmpty, "\(on)")
        let off = try await Self.edit(json: false)
        #expect(off.tree.count == 2 && off.tree["settings.json"] == Self.theirs, "\(off.tree)")
        #expect(off.conflicts.count == 1 && off.conflicts[0].contains("(not merged: merging of JSON files is off)"), "\(off.conflicts)")
    }

    /// Lines apart, each side valid JSON, and yet a merge of lines that is not: refused.
    @Test func aMergeOfLinesThatIsNotJSONIsRefused() {
        let (base, theirs, ours) = ("[\n1\n\n2\n]\n", "[\n1,\n\n2\n]\n", "[\n1\n\n,2\n]\n")
        guard case .refused(let reason) = SyncEngine.jsonMerge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)) else {
            Issue.record("merged into invalid JSON")
            return
        }
        #expect(reason == "the merged lines would not be valid JSON")
        // The control: the same lines merge as text.
        let text = SyncEngine.textMerge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8))
        guard case .merged(let bytes) = text else { Issue.record("no text merge"); return }
        #expect(String(decoding: bytes, as: UTF8.self) == "[\n1,\n\n,2\n]\n")
        guard case .refused("not valid JSON") = SyncEngine.jsonMerge(base: Array(base.utf8), ours: Array(base.utf8), theirs: Array(theirs.utf8)) else {
            Issue.record("an input that is not JSON was merged")
            return
        }
    }
}
