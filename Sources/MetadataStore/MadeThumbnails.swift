import Foundation
import GRDB
import Inodes
import ItemModel

/// Pictures this device made of an item's committed content (PNG bytes by size), kept
/// until a record carries them or the content changes. Keyed by item and by the content
/// they show (`contentKey`), so a picture of old content is never sent with new content.
public enum MadeThumbnails {
    /// What identifies a content: its blocks' hashes and lengths, in order.
    public static func contentKey(_ blocks: [BlockReference]) -> String {
        blocks.map { "\($0.hash):\($0.length)" }.joined(separator: ",")
    }

    /// Replaces the item's pictures with these.
    public static func record(_ id: ItemID, content: [BlockReference], pictures: [Int: [UInt8]], _ db: Database) throws {
        try remove(id, db)
        let key = contentKey(content)
        for (size, png) in pictures.sorted(by: { $0.key < $1.key }) {
            try db.execute(
                sql: "INSERT INTO thumbnail_made(id, size, content, png) VALUES (?, ?, ?, ?)",
                arguments: [id.rawValue, size, key, Data(png)]
            )
        }
    }

    /// The items with pictures waiting to be committed.
    public static func items(_ db: Database) throws -> [ItemID] {
        try String.fetchAll(db, sql: "SELECT DISTINCT id FROM thumbnail_made ORDER BY id").map { ItemID($0) }
    }

    /// The item's pictures, if they show `content`.
    public static func pictures(_ id: ItemID, showing content: [BlockReference], _ db: Database) throws -> [Int: [UInt8]] {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT size, png FROM thumbnail_made WHERE id = ? AND content = ?"),
            arguments: [id.rawValue, contentKey(content)]
        )
        var pictures: [Int: [UInt8]] = [:]
        for row in rows { pictures[row["size"]] = [UInt8](row["png"] as Data) }
        return pictures
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM thumbnail_made WHERE id = ?", arguments: [id.rawValue])
    }

    /// No thumbnailer could picture this content of the item: not tried again.
    public static func noteFailure(_ id: ItemID, content: [BlockReference], _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO thumbnail_failed(id, content) VALUES (?, ?)", arguments: [id.rawValue, contentKey(content)]
        )
    }

    public static func hasFailed(_ id: ItemID, content: [BlockReference], _ db: Database) throws -> Bool {
        try String.fetchOne(db.cachedStatement(sql: "SELECT content FROM thumbnail_failed WHERE id = ?"), arguments: [id.rawValue])
            == contentKey(content)
    }

    /// Local files whose committed content here has no picture and none waiting (with
    /// their names, for the caller to pick the types it can picture): what a stop left
    /// unmade. A scan of every committed snapshot: at start only.
    public static func unpictured(_ db: Database) throws -> [(ino: Inode, name: [UInt8])] {
        try Row.fetchAll(db, sql: """
            SELECT i.ino, i.name FROM item i JOIN base b ON b.id = i.id
            WHERE i.kind = 'file' AND i.deleted = 0 AND i.content = ? AND i.dirty = 0 AND i.ignored = 0
              AND instr(CAST(b.snapshot AS TEXT), '"thumbnails":') = 0
              AND NOT EXISTS (SELECT 1 FROM thumbnail_made m WHERE m.id = i.id)
            ORDER BY i.ino
            """, arguments: [ContentState.local.rawValue]).map { row in (row["ino"], [UInt8](row["name"] as Data)) }
    }
}
