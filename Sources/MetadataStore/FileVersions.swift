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
    /// 0 for the content record `seq` committed; k > 0 for the k-th edit its merge took in
    /// (`MergeNote`), listed as `seq.k`.
    public var input: Int = 0
    /// Set when the content is a merge: the version it merged with, and how.
    public var mergedWith: UInt64?
    public var mergeKind: String?

    public init(seq: UInt64, device: String, time: Int64, size: Int64, mtime: Int64, blocks: [BlockReference], input: Int = 0) {
        (self.seq, self.device, self.time, self.size, self.mtime, self.blocks, self.input) = (seq, device, time, size, mtime, blocks, input)
    }

    /// `seq`, or `seq.input` for an input of a merge.
    public var name: String { input == 0 ? String(seq) : "\(seq).\(input)" }
}

/// Access to the `version` table. A version is recorded when a commit changes a file's
/// content (metadata-only commits are not versions); the blocks stay in the store, so a
/// version is cheap to keep: a few hundred bytes here.
public enum FileVersions {
    public static func record(_ item: ItemSnapshot, seq: UInt64, device: String, time: Int64, _ db: Database) throws {
        guard item.kind == .file else { return }
        let blocks = item.blocks ?? []
        if let latest = try latest(item.id, db), latest.blocks.sameContent(as: blocks) { return }
        try db.cachedStatement(sql: """
            INSERT INTO version(id, seq, device, time, size, mtime, blocks) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id, seq) DO UPDATE SET device = excluded.device, time = excluded.time, size = excluded.size, mtime = excluded.mtime, blocks = excluded.blocks
            """).execute(arguments: [item.id.rawValue, Int64(seq), device, time, item.size, item.mtime, try JSONEncoder().encode(blocks)])
    }

    /// A merge that record `seq` committed as `item`'s content (`MergeNote`, checked): the
    /// version is marked merged (and kept even when its content is the previous one's), and
    /// each input is kept as the version `seq.k`.
    public static func recordMerge(_ merge: MergeNote, of item: ItemSnapshot, seq: UInt64, device: String, time: Int64, _ db: Database) throws {
        guard item.kind == .file, item.id == merge.id else { return }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO version(id, seq, device, time, size, mtime, blocks) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [item.id.rawValue, Int64(seq), device, time, item.size, item.mtime, try JSONEncoder().encode(item.blocks ?? [])])
        try db.cachedStatement(sql: "UPDATE version SET mergedWith = ?, mergeKind = ? WHERE id = ? AND seq = ?")
            .execute(arguments: [Int64(merge.with), merge.kind, item.id.rawValue, Int64(seq)])
        for (index, input) in merge.inputs.enumerated() {
            let version = FileVersion(seq: seq, device: input.device, time: input.time, size: input.size, mtime: input.mtime, blocks: input.blocks, input: index + 1)
            try add(item.id, version, db)
        }
    }

    /// A version learnt from a history object (the journal record that made it is gone).
    public static func add(_ id: ItemID, _ version: FileVersion, _ db: Database) throws {
        let blocks = try JSONEncoder().encode(version.blocks)
        if version.input > 0 {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO version_input(id, seq, input, device, time, size, mtime, blocks) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
                .execute(arguments: [id.rawValue, Int64(version.seq), version.input, version.device, version.time, version.size, version.mtime, blocks])
            return
        }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO version(id, seq, device, time, size, mtime, blocks, mergedWith, mergeKind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [
                id.rawValue, Int64(version.seq), version.device, version.time, version.size, version.mtime, blocks,
                version.mergedWith.map { Int64($0) }, version.mergeKind,
            ])
    }

    /// Every version kept that records up to `seq` made, merges' inputs included, oldest
    /// first: what compacting them must keep in a history object.
    public static func all(through seq: UInt64, _ db: Database) throws -> [(id: ItemID, version: FileVersion)] {
        try Row.fetchAll(db, sql: "\(Self.both) WHERE seq <= ? ORDER BY seq, id, input", arguments: [Int64(seq)]).map {
            (ItemID($0["id"] as String), try decode($0))
        }
    }

    /// Newest first; a merge's inputs after it.
    public static func list(_ id: ItemID, _ db: Database) throws -> [FileVersion] {
        try Row.fetchAll(db, sql: "\(Self.both) WHERE id = ? ORDER BY seq DESC, input", arguments: [id.rawValue]).map(decode)
    }

    public static func find(_ id: ItemID, seq: UInt64, input: Int = 0, _ db: Database) throws -> FileVersion? {
        try Row.fetchOne(db, sql: "\(Self.both) WHERE id = ? AND seq = ? AND input = ?", arguments: [id.rawValue, Int64(seq), input]).map(decode)
    }

    /// The blocks of every version and input kept (what a collector must not delete).
    public static func allBlocks(_ db: Database) throws -> [[BlockReference]] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT blocks FROM version UNION ALL SELECT blocks FROM version_input").map {
            try decoder.decode([BlockReference].self, from: $0)
        }
    }

    /// Versions and inputs as one table.
    private static let both = """
        SELECT * FROM (SELECT id, seq, 0 AS input, device, time, size, mtime, blocks, mergedWith, mergeKind FROM version
                       UNION ALL SELECT id, seq, input, device, time, size, mtime, blocks, NULL, NULL FROM version_input)
        """

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
        let pruned = db.changesCount
        // Inputs go with the merge that took them in.
        try db.execute(sql: "DELETE FROM version_input WHERE NOT EXISTS (SELECT 1 FROM version WHERE version.id = version_input.id AND version.seq = version_input.seq)")
        return pruned + db.changesCount
    }

    private static func decode(_ row: Row) throws -> FileVersion {
        let blocks: Data = row["blocks"]
        var version = FileVersion(
            seq: UInt64(max(0, row["seq"] as Int64)), device: row["device"], time: row["time"], size: row["size"],
            mtime: row["mtime"], blocks: try JSONDecoder().decode([BlockReference].self, from: blocks), input: row["input"] ?? 0
        )
        version.mergedWith = (row["mergedWith"] as Int64?).map { UInt64(max(0, $0)) }
        version.mergeKind = row["mergeKind"]
        return version
    }
}
