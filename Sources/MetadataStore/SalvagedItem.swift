import Foundation
import GRDB
import Inodes
import ItemModel

/// What can still be read of one item in a damaged state database: enough to give
/// recovered content its old path and to tell content the store already has from
/// content only this device had.
public struct SalvagedItem: Sendable, Equatable {
    public var ino: Inode
    public var parent: Inode?
    public var name: [UInt8]
    public var mode: UInt32
    public var deleted: Bool
    /// Written here and not yet uploaded: the only copy is the cache file.
    public var unsynced: Bool

    /// Reads rows one by one and stops at the first unreadable one: a damaged table still
    /// gives what precedes the damage. Never throws; an unreadable database gives [].
    public static func salvage(path: String) -> [SalvagedItem] {
        var items: [SalvagedItem] = []
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return [] }
        defer { try? queue.close() }
        try? queue.read { db in
            let cursor = try Row.fetchCursor(db, sql: "SELECT ino, parent, name, mode, deleted, dirty, baseSeq FROM item")
            while let row = try? cursor.next() {
                let dirty = DirtyFlags(rawValue: row["dirty"] ?? 0)
                let baseSeq: Int64 = row["baseSeq"] ?? 0
                items.append(SalvagedItem(
                    ino: row["ino"], parent: row["parent"], name: [UInt8]((row["name"] as Data?) ?? Data()),
                    mode: UInt32(truncatingIfNeeded: (row["mode"] as Int64?) ?? 0o644), deleted: row["deleted"] ?? false,
                    unsynced: dirty.contains(.content) || baseSeq == 0
                ))
            }
        }
        return items
    }
}
