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
    /// The file open for writing that holds it, for `ubiqfs status`.
    public var waitingFor: String

    public init(seq: UInt64, operation: JournalOperation, device: String, time: Int64, waitingFor: String) {
        self.seq = seq
        self.operation = operation
        self.device = device
        self.time = time
        self.waitingFor = waitingFor
    }

    public var itemID: ItemID { operation.itemID }

    /// `waitingFor` of a change held for a merge with this device's edit (format 4), not
    /// for a writer: a NUL (which no path holds), then the file's path.
    public static func waitingForMerge(of path: String) -> String { "\u{0}" + path }

    public var isMerge: Bool { waitingFor.hasPrefix("\u{0}") }

    /// The path of the file the change waits for (its writer's, or the merge's).
    public var path: String { isMerge ? String(waitingFor.dropFirst()) : waitingFor }
}

/// Access to the `held` table (one row per item with a held change).
public enum HeldChanges {
    /// Holds `change`, replacing the item's earlier held change if there is one.
    public static func hold(_ change: HeldChange, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO held(id, seq, operation, device, time, waitingFor) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [change.itemID.rawValue, Int64(change.seq), try JSONEncoder().encode(change.operation), change.device, change.time, change.waitingFor]
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
            device: row["device"], time: row["time"], waitingFor: row["waitingFor"]
        )
    }
}
