import Foundation
import GRDB
import Inodes

/// Which blocks of a partial file are in its cache file (table `fetched`): a bitmap, bit
/// `i` for block `i` of the item's block list, and the generation of the fill that wrote
/// them, so a fill that was evicted and started over cannot mark blocks of the new one.
/// A trigger drops the row whenever the item stops being partial.
public enum FetchedBlocks {
    public struct Fill: Sendable, Equatable {
        public var generation: Int64
        public var bitmap: [UInt8]

        public init(generation: Int64, bitmap: [UInt8]) {
            self.generation = generation
            self.bitmap = bitmap
        }
    }

    public static func fill(of ino: Inode, _ db: Database) throws -> Fill? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT generation, blocks FROM fetched WHERE ino = ?"), arguments: [ino]) else {
            return nil
        }
        return Fill(generation: row[0], bitmap: [UInt8](row[1] as Data))
    }

    /// Starts a fill: the item becomes partial with no block here.
    public static func start(_ ino: Inode, generation: Int64, blockCount: Int, _ db: Database) throws {
        try ItemRow.setContentState(.partial, of: ino, db)
        try db.execute(
            sql: "INSERT OR REPLACE INTO fetched (ino, generation, blocks) VALUES (?, ?, ?)",
            arguments: [ino, generation, Data(count: (blockCount + 7) / 8)]
        )
    }

    /// Records the blocks now on disk; false if that fill is no longer the item's.
    public static func record(_ ino: Inode, generation: Int64, bitmap: [UInt8], _ db: Database) throws -> Bool {
        try db.cachedStatement(sql: "UPDATE fetched SET blocks = ? WHERE ino = ? AND generation = ?")
            .execute(arguments: [Data(bitmap), ino, generation])
        return db.changesCount > 0
    }

    /// The fill is complete: the item becomes local (the trigger drops its row); false if
    /// that fill is no longer the item's.
    public static func complete(_ ino: Inode, generation: Int64, _ db: Database) throws -> Bool {
        try db.execute(
            sql: "UPDATE item SET content = ? WHERE ino = ? AND content = ? AND EXISTS (SELECT 1 FROM fetched WHERE ino = ? AND generation = ?)",
            arguments: [ContentState.local.rawValue, ino, ContentState.partial.rawValue, ino, generation]
        )
        return db.changesCount > 0
    }

    static func createTable(_ db: Database) throws {
        try db.create(table: "fetched") { t in
            t.primaryKey("ino", .integer).references("item", column: "ino", onDelete: .cascade)
            t.column("generation", .integer).notNull()
            t.column("blocks", .blob).notNull()
        }
        // Every path that makes an item local or a placeholder (a write, an eviction, a
        // change from another device, a restore) drops what was known of a fill.
        try db.execute(sql: """
            CREATE TRIGGER fetched_ends AFTER UPDATE OF content ON item WHEN NEW.content != 2
            BEGIN DELETE FROM fetched WHERE ino = NEW.ino; END
            """)
    }
}
