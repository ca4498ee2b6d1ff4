import Foundation
import GRDB
import ItemModel

/// Access to the `base` table: each item's committed snapshot and the sequence that set it.
public enum BaseSnapshots {
    public static func find(_ id: ItemID, _ db: Database) throws -> ItemSnapshot? {
        guard let data = try Data.fetchOne(db.cachedStatement(sql: "SELECT snapshot FROM base WHERE id = ?"), arguments: [id.rawValue]) else {
            return nil
        }
        return try JSONDecoder().decode(ItemSnapshot.self, from: data)
    }

    public static func set(_ snapshot: ItemSnapshot, seq: UInt64, _ db: Database) throws {
        let data = try JSONEncoder().encode(snapshot)
        try db.cachedStatement(
            sql: "INSERT INTO base(id, seq, snapshot) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, snapshot = excluded.snapshot"
        ).execute(arguments: [snapshot.id.rawValue, Int64(seq), data])
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM base WHERE id = ?").execute(arguments: [id.rawValue])
    }

    public static func all(_ db: Database) throws -> [ItemSnapshot] {
        let decoder = JSONDecoder()
        return try Data.fetchAll(db, sql: "SELECT snapshot FROM base ORDER BY id").map { try decoder.decode(ItemSnapshot.self, from: $0) }
    }
}
