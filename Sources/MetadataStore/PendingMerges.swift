import Foundation
import GRDB
import ItemModel

/// Merges made here that no record carries yet (`merge_pending`): what the next record
/// that commits the file says in `merges`, and the hash of the merged content, so a merge
/// done again after a crash does not take its own result for an edit.
public enum PendingMerges {
    public static func set(_ note: MergeNote, merged: String, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO merge_pending(id, note, merged) VALUES (?, ?, ?)",
            arguments: [note.id.rawValue, try JSONEncoder().encode(note), merged]
        )
    }

    public static func find(_ id: ItemID, _ db: Database) throws -> (note: MergeNote, merged: String)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT note, merged FROM merge_pending WHERE id = ?", arguments: [id.rawValue]) else { return nil }
        return (try JSONDecoder().decode(MergeNote.self, from: row["note"] as Data), row["merged"])
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM merge_pending WHERE id = ?", arguments: [id.rawValue])
    }

    /// The blocks of every pending input (what a collector must not delete).
    public static func allBlocks(_ db: Database) throws -> [[BlockReference]] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT note FROM merge_pending").flatMap { try decoder.decode(MergeNote.self, from: $0).inputs.map(\.blocks) }
    }
}
