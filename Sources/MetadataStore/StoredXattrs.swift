import Foundation
import GRDB
import Inodes

/// An item's user extended attributes, one row per attribute (table `xattr`), so a
/// setxattr or removexattr costs the same whatever the item holds. They went in one JSON
/// column until migration v5, which made each change rewrite the whole set.
public enum StoredXattrs {
    public static func value(of ino: Inode, named name: String, _ db: Database) throws -> Data? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM xattr WHERE ino = ? AND name = ?"), arguments: [ino, name])
    }

    /// Names in byte order.
    public static func names(of ino: Inode, _ db: Database) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM xattr WHERE ino = ? ORDER BY CAST(name AS BLOB)"), arguments: [ino])
    }

    public static func all(of ino: Inode, _ db: Database) throws -> [String: Data] {
        var all: [String: Data] = [:]
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT name, value FROM xattr WHERE ino = ?"), arguments: [ino])
        while let row = try rows.next() { all[row["name"]] = row["value"] }
        return all
    }

    /// Bytes of names and values, what the per-item limit counts.
    public static func totalSize(of ino: Inode, _ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT coalesce(sum(length(CAST(name AS BLOB)) + length(value)), 0) FROM xattr WHERE ino = ?"), arguments: [ino]) ?? 0
    }

    public static func set(_ ino: Inode, name: String, value: Data, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO xattr(ino, name, value) VALUES (?, ?, ?) ON CONFLICT(ino, name) DO UPDATE SET value = excluded.value")
            .execute(arguments: [ino, name, value])
    }

    /// Returns whether the attribute was there.
    public static func remove(_ ino: Inode, name: String, _ db: Database) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM xattr WHERE ino = ? AND name = ?").execute(arguments: [ino, name])
        return db.changesCount > 0
    }

    /// Makes the item's set exactly `xattrs` (a record from another device).
    public static func replace(_ ino: Inode, with xattrs: [String: Data], _ db: Database) throws {
        guard try all(of: ino, db) != xattrs else { return }
        try db.cachedStatement(sql: "DELETE FROM xattr WHERE ino = ?").execute(arguments: [ino])
        for (name, value) in xattrs { try set(ino, name: name, value: value, db) }
    }
}
