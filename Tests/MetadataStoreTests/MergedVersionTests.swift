import Foundation
import GRDB
import Testing
import ItemModel
@testable import MetadataStore

/// Merged versions and their inputs in the `version` and `version_input` tables.
@Suite struct MergedVersionTests {
    static func block(_ byte: UInt8, _ length: Int64) -> [BlockReference] {
        [BlockReference(hash: String(repeating: String(format: "%02x", byte), count: 32), length: length)]
    }

    /// A merged version is kept even when its content equals the one before; its inputs are
    /// listed after it as `seq.k`, found, collected as live, and pruned with it alone.
    @Test func inputsLiveAndGoWithTheirMergedVersion() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-md-\(UUID().uuidString).db").path
        let store = try MetadataStore(path: path)
        let id = ItemID.random()
        var item = ItemSnapshot(id: id, parent: .root, name: ByteString("notes.md"), kind: .file, mode: 0o644, mtime: 1, size: 5, blocks: Self.block(1, 5))
        let merge = MergeNote(id: id, base: 1, with: 2, kind: "text", inputs: [
            MergeInput(device: "laptop", time: 30, size: 7, mtime: 29, blocks: Self.block(3, 7)),
            MergeInput(device: "laptop", time: 31, size: 8, mtime: 30, blocks: Self.block(4, 8)),
        ])
        try store.write { db in
            try FileVersions.record(item, seq: 2, device: "desk", time: 20, db)
            // The merge's result is the content of version 2: still a version of its own.
            try FileVersions.record(item, seq: 3, device: "laptop", time: 32, db)
            try FileVersions.recordMerge(merge, of: item, seq: 3, device: "laptop", time: 32, db)
        }
        let listed = try store.read { db in try FileVersions.list(id, db) }
        #expect(listed.map(\.name) == ["3", "3.1", "3.2", "2"])
        #expect(listed[0].mergedWith == 2 && listed[0].mergeKind == "text" && listed[1].mergedWith == nil)
        #expect(listed[1].device == "laptop" && listed[1].size == 7 && listed[1].blocks == Self.block(3, 7) && listed[2].mtime == 30)
        #expect(try store.read { db in try FileVersions.find(id, seq: 3, input: 2, db) }?.size == 8)
        #expect(try store.read { db in try FileVersions.find(id, seq: 3, input: 3, db) } == nil)
        let live = try store.read { db in try FileVersions.allBlocks(db) }
        #expect(live.contains(Self.block(3, 7)) && live.contains(Self.block(4, 8)))
        #expect(try store.read { db in try FileVersions.all(through: 3, db) }.map(\.version.name) == ["2", "3", "3.1", "3.2"])
        // A later version of the content of the merge re-records nothing and keeps the marks.
        try store.write { db in try FileVersions.record(item, seq: 3, device: "laptop", time: 32, db) }
        #expect(try store.read { db in try FileVersions.list(id, db) }.first?.mergedWith == 2)

        // The file lives on (an item row), so pruning keeps the newest version and its inputs...
        try store.write { db in
            var row = ItemRow(id: id, parent: .root, name: ByteString("notes.md"), kind: .file, mode: 0o644, uid: 0, gid: 0, size: 5, mtime: 1)
            try row.insert(db)
            _ = try FileVersions.prune(before: .max, db)
        }
        #expect(try store.read { db in try FileVersions.list(id, db) }.map(\.name) == ["3", "3.1", "3.2"])
        // ...and when a newer one comes, the merge and its inputs go together.
        item.blocks = Self.block(9, 5)
        try store.write { db in
            try FileVersions.record(item, seq: 4, device: "desk", time: 40, db)
            _ = try FileVersions.prune(before: .max, db)
        }
        #expect(try store.read { db in try FileVersions.list(id, db) }.map(\.name) == ["4"])
        #expect(try store.read { db in try FileVersions.allBlocks(db) } == [Self.block(9, 5)])
    }
}
