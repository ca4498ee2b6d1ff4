import Foundation
import GRDB
import ItemModel

/// Another device's committed change to an item that a program here has open for writing
/// (and has not written yet): it waits for that item alone, while the rest of its record and
/// every later record are applied. Kept until the writer closes (or the daemon restarts),
/// then applied by the usual rules; a later change to the same item replaces it.
public struct HeldChange: Sendable, Equatable {
    /// The journal record that committed it (the newest one, when later changes replaced it).
    public var seq: UInt64
    public var operation: JournalOperation
    /// Who committed it and when, for the file version it makes.
    public var device: String
    public var time: Int64
    /// The path of the file the change waits for (its writer's, or the merge's), for
    /// `ubiqfs status`.
    public var waitingFor: String
    /// Held for a merge with this device's edit of the file (format 4), not for a writer.
    public var isMerge: Bool

    public init(seq: UInt64, operation: JournalOperation, device: String, time: Int64, waitingFor: String, isMerge: Bool = false) {
        self.seq = seq
        self.operation = operation
        self.device = device
        self.time = time
        self.waitingFor = waitingFor
        self.isMerge = isMerge
    }

    public var itemID: ItemID { operation.itemID }
}

/// Access to the `held` table (one row per item with a held change).
public enum HeldChanges {
    /// Holds `change`, replacing the item's earlier held change if there is one.
    public static func hold(_ change: HeldChange, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO held(id, seq, operation, device, time, waitingFor, merge) VALUES (?, ?, ?, ?, ?, ?, ?)",
            arguments: [
                change.itemID.rawValue, Int64(change.seq), try JSONEncoder().encode(change.operation), change.device, change.time, change.waitingFor,
                change.isMerge,
            ]
        )
    }

    public static func isEmpty(_ db: Database) throws -> Bool {
        try !(Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM held)")) ?? false)
    }

    public static func find(_ id: ItemID, _ db: Database) throws -> HeldChange? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM held WHERE id = ?"), arguments: [id.rawValue]).map(decode)
    }

    /// Oldest first.
    public static func all(_ db: Database) throws -> [HeldChange] {
        try Row.fetchAll(db, sql: "SELECT * FROM held ORDER BY seq").map(decode)
    }

    public static func remove(_ id: ItemID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM held WHERE id = ?", arguments: [id.rawValue])
    }

    private static func decode(_ row: Row) throws -> HeldChange {
        HeldChange(
            seq: UInt64(row["seq"] as Int64), operation: try JSONDecoder().decode(JournalOperation.self, from: row["operation"] as Data),
            device: row["device"], time: row["time"], waitingFor: row["waitingFor"], isMerge: row["merge"]
        )
    }
}
