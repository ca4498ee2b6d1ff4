import Foundation
import GRDB
import ItemModel

/// Access to the `base` table: each item's committed snapshot and the sequence that set it,
/// with its folder and name beside it so pushes can ask who holds a name (v7).
public enum BaseSnapshots {
    /// A committed place: a folder's id and a name in it.
    public struct Place: Hashable, Sendable {
        public var parent: ItemID
        public var name: ByteString

        public init(parent: ItemID, name: ByteString) {
            self.parent = parent
            self.name = name
        }
    }

    public static func find(_ id: ItemID, _ db: Database) throws -> ItemSnapshot? {
        guard let data = try Data.fetchOne(db.cachedStatement(sql: "SELECT snapshot FROM base WHERE id = ?"), arguments: [id.rawValue]) else {
            return nil
        }
        return try JSONDecoder().decode(ItemSnapshot.self, from: data)
    }

    public static func set(_ snapshot: ItemSnapshot, seq: UInt64, _ db: Database) throws {
        let data = try JSONEncoder().encode(snapshot)
        try db.cachedStatement(
            sql: """
                INSERT INTO base(id, seq, snapshot, parent, name) VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE
                SET seq = excluded.seq, snapshot = excluded.snapshot, parent = excluded.parent, name = excluded.name
                """
        ).execute(arguments: [snapshot.id.rawValue, Int64(seq), data, snapshot.parent.rawValue, Data(snapshot.name.bytes)])
        try ChunkIndex.record(snapshot, db)
    }

    /// The committed items that carry thumbnails (a scan of every snapshot: at start only).
    public static func withThumbnails(_ db: Database) throws -> [ItemID] {
        try String.fetchAll(db, sql: #"SELECT id FROM base WHERE instr(CAST(snapshot AS TEXT), '"thumbnails":') > 0"#).map(ItemID.init)
    }

    /// The committed item's folder.
    public static func parent(of id: ItemID, _ db: Database) throws -> ItemID? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT parent FROM base WHERE id = ?"), arguments: [id.rawValue]).map(ItemID.init)
    }

    /// The committed item's folder and name, without decoding its snapshot.
    public static func placement(of id: ItemID, _ db: Database) throws -> (parent: ItemID, name: ByteString)? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT parent, name FROM base WHERE id = ?"), arguments: [id.rawValue]) else {
            return nil
        }
        let name: Data = row["name"]
        return (ItemID(row["parent"] as String), ByteString(Array(name)))
    }

    /// The committed items named `name` in the folder `parent` (one, in a consistent base).
    public static func holders(of name: ByteString, in parent: ItemID, _ db: Database) throws -> [ItemID] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT id FROM base WHERE parent = ? AND name = ?"), arguments: [parent.rawValue, Data(name.bytes)])
            .map(ItemID.init)
    }

    /// The committed items in the folder `parent`.
    public static func children(of parent: ItemID, _ db: Database) throws -> [ItemID] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT id FROM base WHERE parent = ?"), arguments: [parent.rawValue]).map(ItemID.init)
    }

    /// Every committed item below the folder `id`, at any depth (a cycle in a damaged
    /// table ends where it repeats: UNION drops rows already found).
    public static func descendants(of id: ItemID, _ db: Database) throws -> Set<ItemID> {
        let found = try String.fetchAll(db, sql: """
            WITH RECURSIVE below(id) AS (
                SELECT id FROM base WHERE parent = ? UNION
                SELECT base.id FROM base JOIN below ON base.parent = below.id
            ) SELECT id FROM below
            """, arguments: [id.rawValue])
        return Set(found.map(ItemID.init)).subtracting([id])
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM base WHERE id = ?").execute(arguments: [id.rawValue])
    }

    public static func all(_ db: Database) throws -> [ItemSnapshot] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT snapshot FROM base ORDER BY id").map { try decoder.decode(ItemSnapshot.self, from: $0) }
    }
}
