import Foundation
import GRDB
import ItemModel

/// Each file's blocks as the journal last gave them (the `journal_blocks` table, v22),
/// whatever this device did with that change (applied, held for a writer, refused here):
/// what a format-5 splice (`BlockSplice`) is an edit of, on the device that writes it and
/// on the devices that read it. Follows relocations as every other reference does. With
/// each list, how many splices in a row made it (`spliced`): a writer sends a whole list
/// now and then, so a device whose list went astray (a record damaged in the store, a
/// splice it refused) is back on the journal's.
public enum JournalBlocks {
    public static func find(_ id: ItemID, _ db: Database) throws -> [BlockReference]? {
        try entry(id, db)?.blocks
    }

    /// The list and how many splices in a row made it.
    public static func entry(_ id: ItemID, _ db: Database) throws -> (blocks: [BlockReference], spliced: Int)? {
        let sql = "SELECT blocks, spliced FROM journal_blocks WHERE id = ?"
        guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [id.rawValue]) else { return nil }
        return (try JSONDecoder().decode([BlockReference].self, from: row["blocks"] as Data), row["spliced"])
    }

    /// Notes a file's blocks from a record or a checkpoint: `spliced` splices in a row made
    /// them (0: a whole list).
    public static func set(_ id: ItemID, _ blocks: [BlockReference], spliced: Int = 0, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO journal_blocks(id, blocks, spliced) VALUES (?, ?, ?)")
            .execute(arguments: [id.rawValue, try JSONEncoder().encode(blocks), spliced])
    }

    /// Forgets an item the journal deleted, that is no file any more, or whose splice this
    /// device refused (its list is not the journal's: nothing is cut from it).
    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM journal_blocks WHERE id = ?").execute(arguments: [id.rawValue])
    }

    /// The table, filled from the committed snapshots there are (what the journal gave
    /// them, but for a change held here, whose version of the list is not the base's).
    static func createTable(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE journal_blocks(id TEXT PRIMARY KEY NOT NULL, blocks BLOB NOT NULL, spliced INTEGER NOT NULL)")
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
