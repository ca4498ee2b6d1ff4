import GRDB
import Inodes

/// Inodes are `item`'s row ids: stored, bound and read as SQLite integers.
extension Inode: DatabaseValueConvertible, StatementColumnConvertible {
    public var databaseValue: DatabaseValue { rowID.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Inode? {
        Int64.fromDatabaseValue(dbValue).map(Inode.init)
    }

    public init(sqliteStatement: SQLiteStatement, index: CInt) {
        self.init(Int64(sqliteStatement: sqliteStatement, index: index))
    }
}
