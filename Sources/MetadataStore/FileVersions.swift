import Foundation
import GRDB
import ItemModel

/// One committed content of a file: what `ubiqfs versions` lists and `restore` brings back.
public struct FileVersion: Sendable, Codable, Equatable {
    /// The journal sequence number that committed it: the version's name on every device.
    public var seq: UInt64
    public var device: String
    /// When it was committed, in nanoseconds since 1970.
    public var time: Int64
    public var size: Int64
    public var mtime: Int64
    public var blocks: [BlockReference]

    public init(seq: UInt64, device: String, time: Int64, size: Int64, mtime: Int64, blocks: [BlockReference]) {
        (self.seq, self.device, self.time, self.size, self.mtime, self.blocks) = (seq, device, time, size, mtime, blocks)
    }
}

/// Access to the `version` table. A version is recorded when a commit changes a file's
/// content (metadata-only commits are not versions); the blocks stay in the store, so a
/// version is cheap to keep: a few hundred bytes here.
public enum FileVersions {
    public static func record(_ item: ItemSnapshot, seq: UInt64, device: String, time: Int64, _ db: Database) throws {
        guard item.kind == .file else { return }
        let blocks = item.blocks ?? []
        if let latest = try latest(item.id, db), latest.blocks.sameContent(as: blocks) { return }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO version(id, seq, device, time, size, mtime, blocks) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [item.id.rawValue, Int64(seq), device, time, item.size, item.mtime, try JSONEncoder().encode(blocks)])
    }

    /// A version learnt from a history object (the journal record that made it is gone).
    public static func add(_ id: ItemID, _ version: FileVersion, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO version(id, seq, device, time, size, mtime, blocks) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [
                id.rawValue, Int64(version.seq), version.device, version.time, version.size, version.mtime, try JSONEncoder().encode(version.blocks),
            ])
    }

    /// Every version kept that records up to `seq` made, oldest first: what compacting
    /// them must keep in a history object.
    public static func all(through seq: UInt64, _ db: Database) throws -> [(id: ItemID, version: FileVersion)] {
        try Row.fetchAll(db, sql: "SELECT * FROM version WHERE seq <= ? ORDER BY seq, id", arguments: [Int64(seq)]).map {
            (ItemID($0["id"] as String), try decode($0))
        }
    }

    /// Newest first.
    public static func list(_ id: ItemID, _ db: Database) throws -> [FileVersion] {
        try Row.fetchAll(db, sql: "SELECT * FROM version WHERE id = ? ORDER BY seq DESC", arguments: [id.rawValue]).map(decode)
    }

    public static func find(_ id: ItemID, seq: UInt64, _ db: Database) throws -> FileVersion? {
        try Row.fetchOne(db, sql: "SELECT * FROM version WHERE id = ? AND seq = ?", arguments: [id.rawValue, Int64(seq)]).map(decode)
    }

    /// The blocks of every version kept (what a collector must not delete).
    public static func allBlocks(_ db: Database) throws -> [[BlockReference]] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT blocks FROM version").map { try decoder.decode([BlockReference].self, from: $0) }
    }

    static func latest(_ id: ItemID, _ db: Database) throws -> FileVersion? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM version WHERE id = ? ORDER BY seq DESC LIMIT 1"), arguments: [id.rawValue]).map(decode)
    }

    /// Forgets versions committed before `cutoff` (ns), except each file's newest, and
    /// the versions of items deleted here and not in the trash (a file restored from the
    /// trash keeps its history). Returns how many went.
    @discardableResult
    public static func prune(before cutoff: Int64, _ db: Database) throws -> Int {
        try db.execute(sql: """
            DELETE FROM version WHERE (time < ? AND seq < (SELECT max(seq) FROM version AS newer WHERE newer.id = version.id))
               OR (NOT EXISTS (SELECT 1 FROM item WHERE item.id = version.id AND item.deleted = 0)
                   AND NOT EXISTS (SELECT 1 FROM trashed WHERE trashed.id = version.id))
            """, arguments: [cutoff])
        return db.changesCount
    }

    private static func decode(_ row: Row) throws -> FileVersion {
        let blocks: Data = row["blocks"]
        return FileVersion(
            seq: UInt64(max(0, row["seq"] as Int64)), device: row["device"], time: row["time"], size: row["size"],
            mtime: row["mtime"], blocks: try JSONDecoder().decode([BlockReference].self, from: blocks)
        )
    }
}
