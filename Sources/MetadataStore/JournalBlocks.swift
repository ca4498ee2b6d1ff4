import Foundation
import GRDB
import ItemModel

/// Each file's blocks as the journal last gave them (the `journal_blocks` table, v22),
/// whatever this device did with that change (applied, held for a writer, refused here):
/// what a format-5 splice (`BlockSplice`) is an edit of, on the device that writes it and
/// on every device that reads it. Follows relocations as every other reference does.
public enum JournalBlocks {
    public static func find(_ id: ItemID, _ db: Database) throws -> [BlockReference]? {
        let sql = "SELECT blocks FROM journal_blocks WHERE id = ?"
        guard let data = try Data.fetchOne(db.cachedStatement(sql: sql), arguments: [id.rawValue]) else { return nil }
        return try JSONDecoder().decode([BlockReference].self, from: data)
    }

    /// Notes a file's blocks from a record or a checkpoint.
    public static func set(_ id: ItemID, _ blocks: [BlockReference], _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO journal_blocks(id, blocks) VALUES (?, ?)")
            .execute(arguments: [id.rawValue, try JSONEncoder().encode(blocks)])
    }

    /// Forgets an item the journal deleted, or that is no file any more.
    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM journal_blocks WHERE id = ?").execute(arguments: [id.rawValue])
    }

    /// The table, filled from the committed snapshots there are (what the journal gave
    /// them, but for a change held here, whose version of the list is not the base's).
    static func createTable(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE journal_blocks(id TEXT PRIMARY KEY NOT NULL, blocks BLOB NOT NULL)")
        for data in try Data.fetchAll(db, sql: "SELECT snapshot FROM base") {
            let item = try JSONDecoder().decode(ItemSnapshot.self, from: data)
            if item.kind == .file, let blocks = item.blocks { try set(item.id, blocks, db) }
        }
        for data in try Data.fetchAll(db, sql: "SELECT operation FROM held") {
            switch try JSONDecoder().decode(JournalOperation.self, from: data) {
            case .upsert(let item) where item.kind == .file: try set(item.id, item.blocks ?? [], db)
            case .upsert(let item): try remove(item.id, db)
            case .delete(let id): try remove(id, db)
            }
        }
    }
}
