import Foundation
import GRDB
import ItemModel

/// One deleted item as the journal committed its delete, with what it held: what
/// `ubiqfs trash` lists and `trash restore` brings back. Items deleted in one record
/// inside a folder the record also deleted belong to that folder's entry.
public struct TrashEntry: Sendable, Codable, Equatable {
    /// The record that committed the delete, and who committed it and when.
    public var seq: UInt64
    public var device: String
    public var time: Int64
    /// The names of the folders it was in, from the root (empty: at the top).
    public var folder: [ByteString]
    /// The deleted item first, then what it held, each folder before what is in it: the
    /// snapshots last committed, blocks included.
    public var items: [ItemSnapshot]
    /// The push of many records it came in (`JournalRecord.batch`), if any.
    public var batch: String?

    public init(seq: UInt64, device: String, time: Int64, folder: [ByteString], items: [ItemSnapshot], batch: String? = nil) {
        self.batch = batch
        self.seq = seq
        self.device = device
        self.time = time
        self.folder = folder
        self.items = items
    }

    public var top: ItemSnapshot { items[0] }
    /// Bytes of the files in it.
    public var size: Int64 { items.reduce(0) { $0 + ($1.kind == .file ? $1.size : 0) } }
    /// Where it was, "/a/b/name".
    public var path: String { "/" + (folder + [top.name]).map(\.description).joined(separator: "/") }

    /// The item of this entry that was at `path` ("/a/b/name"): the top or one inside it.
    public func item(at path: String) -> ItemID? {
        var paths: [ItemID: String] = [top.id: self.path]
        for item in items.dropFirst() {
            guard let folder = paths[item.parent] else { continue }
            paths[item.id] = folder + "/" + item.name.description
        }
        return items.first { paths[$0.id] == path }?.id
    }

    /// What restoring `target` brings back: the folders of the entry that lead to it, it,
    /// and everything it held.
    public func restoring(_ target: ItemID) -> Set<ItemID> {
        let parents = Dictionary(items.map { ($0.id, $0.parent) }, uniquingKeysWith: { first, _ in first })
        var wanted: Set<ItemID> = []
        var next: ItemID? = target
        while let id = next, parents[id] != nil, wanted.insert(id).inserted { next = parents[id] }
        for item in items where !wanted.contains(item.id) {
            var up: ItemID? = item.parent
            var seen: Set<ItemID> = [item.id]
            while let id = up, id != target, parents[id] != nil, seen.insert(id).inserted { up = parents[id] }
            if up == target { wanted.insert(item.id) }
        }
        return wanted
    }
}

/// Access to the `trash` table (one row per entry) and `trashed` (every item id in an
/// entry, so the versions of a deleted file stay while it can be restored).
public enum TrashEntries {
    static func createTables(_ db: Database) throws {
        try db.create(table: "trash") { t in
            t.column("seq", .integer).notNull()
            t.column("id", .text).notNull()
            t.column("time", .integer).notNull()
            t.column("entry", .blob).notNull()
            t.primaryKey(["seq", "id"])
        }
        try db.create(table: "trashed") { t in
            t.column("id", .text).notNull()
            t.column("seq", .integer).notNull()
            t.column("top", .text).notNull()
            t.primaryKey(["id", "seq"])
        }
    }

    public static func add(_ entry: TrashEntry, _ db: Database) throws {
        let top = entry.top.id.rawValue
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO trash(seq, id, time, entry) VALUES (?, ?, ?, ?)")
            .execute(arguments: [Int64(entry.seq), top, entry.time, try JSONEncoder().encode(entry)])
        for item in entry.items {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO trashed(id, seq, top) VALUES (?, ?, ?)")
                .execute(arguments: [item.id.rawValue, Int64(entry.seq), top])
        }
    }

    /// Newest first.
    public static func all(_ db: Database) throws -> [TrashEntry] {
        try after(0, db)
    }

    /// Entries of records after `seq`, newest first (a batch's records are near each other).
    public static func after(_ seq: UInt64, _ db: Database) throws -> [TrashEntry] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT entry FROM trash WHERE seq > ? ORDER BY seq DESC, id", arguments: [Int64(seq)])
            .map { try decoder.decode(TrashEntry.self, from: $0) }
    }

    /// Entries of records up to `seq`, oldest first: what compacting them must keep.
    public static func through(_ seq: UInt64, _ db: Database) throws -> [TrashEntry] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT entry FROM trash WHERE seq <= ? ORDER BY seq, id", arguments: [Int64(seq)])
            .map { try decoder.decode(TrashEntry.self, from: $0) }
    }

    public static func remove(seq: UInt64, id: ItemID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM trashed WHERE seq = ? AND top = ?", arguments: [Int64(seq), id.rawValue])
        try db.execute(sql: "DELETE FROM trash WHERE seq = ? AND id = ?", arguments: [Int64(seq), id.rawValue])
    }

    /// Forgets entries whose delete was committed before `cutoff` (ns). Returns how many went.
    @discardableResult
    public static func prune(before cutoff: Int64, _ db: Database) throws -> Int {
        try db.execute(sql: "DELETE FROM trashed WHERE EXISTS (SELECT 1 FROM trash WHERE trash.seq = trashed.seq AND trash.id = trashed.top AND trash.time < ?)", arguments: [cutoff])
        try db.execute(sql: "DELETE FROM trash WHERE time < ?", arguments: [cutoff])
        return db.changesCount
    }
}
