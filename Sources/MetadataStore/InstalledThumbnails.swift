import GRDB
import ItemModel

/// An entry this device wrote into the desktop's thumbnail cache for an item: where (its
/// URI), for which `stat` (the viewer checks mtime and size), and which pictures.
public struct InstalledThumbnail: Sendable, Equatable {
    public var id: ItemID
    public var uri: String
    /// Whole seconds, as the cache entry says it.
    public var mtime: Int64
    public var size: Int64
    /// The content key (`MadeThumbnails.contentKey`) of the picture installed.
    public var pictures: String

    public init(id: ItemID, uri: String, mtime: Int64, size: Int64, pictures: String) {
        self.id = id
        self.uri = uri
        self.mtime = mtime
        self.size = size
        self.pictures = pictures
    }
}

/// Access to the `thumbnail_installed` table.
public enum InstalledThumbnails {
    public static func set(_ entry: InstalledThumbnail, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO thumbnail_installed(id, uri, mtime, size, pictures) VALUES (?, ?, ?, ?, ?)",
            arguments: [entry.id.rawValue, entry.uri, entry.mtime, entry.size, entry.pictures]
        )
    }

    public static func find(_ id: ItemID, _ db: Database) throws -> InstalledThumbnail? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM thumbnail_installed WHERE id = ?"), arguments: [id.rawValue]).map(decode)
    }

    public static func all(_ db: Database) throws -> [InstalledThumbnail] {
        try Row.fetchAll(db, sql: "SELECT * FROM thumbnail_installed ORDER BY id").map(decode)
    }

    /// Entries whose item is gone or deleted here (a folder above it went).
    public static func orphaned(_ db: Database) throws -> [ItemID] {
        try String.fetchAll(db, sql: """
            SELECT t.id FROM thumbnail_installed t LEFT JOIN item i ON i.id = t.id WHERE i.ino IS NULL OR i.deleted != 0 ORDER BY t.id
            """).map { ItemID($0) }
    }

    public static func count(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM thumbnail_installed") ?? 0
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM thumbnail_installed WHERE id = ?", arguments: [id.rawValue])
    }

    private static func decode(_ row: Row) -> InstalledThumbnail {
        InstalledThumbnail(id: ItemID(row["id"] as String), uri: row["uri"], mtime: row["mtime"], size: row["size"], pictures: row["pictures"])
    }
}
