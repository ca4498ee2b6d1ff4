import Foundation
import GRDB
import Inodes

/// An `ItemRow` read straight from a statement's columns by position, through GRDB's fast
/// single-value path. GRDB's `Row` builds a dictionary of lower-cased column names for
/// every fetch, which was most of the cost of reading one item (about 18 µs of a
/// getattr's 27). Only for statements that select `ItemRowColumns.list`, in that order.
struct ItemRowColumns: DatabaseValueConvertible, StatementColumnConvertible {
    /// The columns, in the order `init(sqliteStatement:index:)` reads them.
    static let list = "ino, \(ItemRow.columns)"

    let row: ItemRow

    /// nil when a column does not hold what the schema says (GRDB then throws a decoding error).
    init?(sqliteStatement statement: SQLiteStatement, index: CInt) {
        func value<T: DatabaseValueConvertible & StatementColumnConvertible>(_ column: CInt) -> T? {
            T(sqliteStatement: statement, index: index + column)
        }
        func optional<T: DatabaseValueConvertible>(_ column: CInt) -> T? {
            T.fromDatabaseValue(DatabaseValue(sqliteStatement: statement, index: index + column))
        }
        guard let ino: Inode = value(0), let id: String = value(1), let name: Data = value(3), let kind: String = value(4),
              let mode: Int64 = value(5), let uid: Int64 = value(6), let gid: Int64 = value(7), let size: Int64 = value(8),
              let mtime: Int64 = value(9), let ctime: Int64 = value(10), let atime: Int64 = value(11),
              let content: Int = value(14), let baseSeq: Int64 = value(15), let dirty: Int = value(16),
              let deleted: Bool = value(17), let changeGen: Int64 = value(18), let ignored: Int = value(22)
        else { return nil }
        row = ItemRow(
            ino: ino, id: id, parent: optional(2), name: name, kind: kind, mode: mode, uid: uid, gid: gid, size: size,
            mtime: mtime, ctime: ctime, atime: atime, target: optional(12), blocks: optional(13), content: content,
            baseSeq: baseSeq, dirty: dirty, deleted: deleted, changeGen: changeGen, pinned: optional(19), rdev: optional(20),
            linkTo: optional(21), ignored: ignored
        )
    }

    /// Only ever read: never bound as a statement argument.
    var databaseValue: DatabaseValue { .null }

    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ItemRowColumns? { nil }
}
