import Foundation
import GRDB
import ItemModel

/// Where the blocks of committed large files are, by name (the `chunk` table, v21): an
/// upload names a block the store already has instead of sending it again, whichever file
/// it came from (a copy, a file brought back). Filled as committed snapshots are set; an
/// entry is a hint, not a promise: the uploader drops one whose object a collector
/// condemned, and the push checks the others exist (rule W3) and forgets those that do not.
public enum ChunkIndex {
    /// Files of more than one block are indexed: a small file is one packed block, cheaper
    /// to send again than to look up.
    static func record(_ snapshot: ItemSnapshot, _ db: Database) throws {
        guard let blocks = snapshot.blocks, blocks.count > 1 else { return }
        let statement = try db.cachedStatement(sql: "INSERT OR REPLACE INTO chunk(hash, length, object, reference) VALUES (?, ?, ?, ?)")
        let encoder = JSONEncoder()
        for block in blocks where block.length > 0 {
            guard let key = ContainerLayout.objectKey(of: block) else { continue }
            try statement.execute(arguments: [block.hash, block.length, key, try encoder.encode(block)])
        }
    }

    /// The block named `hash` of `length` bytes where it was last committed, if any.
    public static func find(_ hash: String, length: Int64, _ db: Database) throws -> BlockReference? {
        let sql = "SELECT reference FROM chunk WHERE hash = ? AND length = ?"
        guard let data = try Data.fetchOne(db.cachedStatement(sql: sql), arguments: [hash, length]) else { return nil }
        return try JSONDecoder().decode(BlockReference.self, from: data)
    }

    /// Forgets the entries that place a block in one of `keys` (objects found missing or
    /// condemned).
    public static func forget(objects keys: some Sequence<String>, _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM chunk WHERE object = ?")
        for key in keys { try statement.execute(arguments: [key]) }
    }

    /// Follows a collector's moves: an entry for a blob that left a pack names its new place.
    static func relocate(_ moves: [BlobMove], _ db: Database) throws {
        let select = try db.cachedStatement(sql: "SELECT reference FROM chunk WHERE hash = ? AND object = ?")
        let update = try db.cachedStatement(sql: "UPDATE chunk SET object = ?, reference = ? WHERE hash = ?")
        for move in moves {
            guard let data = try Data.fetchOne(select, arguments: [move.hash, ContainerLayout.packKey(move.from)]),
                  let moved = move.applied(to: try JSONDecoder().decode(BlockReference.self, from: data)) else { continue }
            try update.execute(arguments: [ContainerLayout.packKey(move.pack), try JSONEncoder().encode(moved), move.hash])
        }
    }

    /// The table, filled from the committed snapshots there are.
    static func createTable(_ db: Database) throws {
        // `object`: the key of the object the reference names (a block's or a pack's).
        try db.execute(sql: """
            CREATE TABLE chunk(hash TEXT PRIMARY KEY NOT NULL, length INTEGER NOT NULL, object TEXT NOT NULL, reference BLOB NOT NULL);
            CREATE INDEX chunk_object ON chunk(object);
            """)
        for data in try Data.fetchAll(db, sql: "SELECT snapshot FROM base") {
            try record(try JSONDecoder().decode(ItemSnapshot.self, from: data), db)
        }
    }
}
