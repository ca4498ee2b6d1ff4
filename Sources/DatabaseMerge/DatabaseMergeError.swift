import ItemModel

/// Why three versions of an SQLite database were not merged into one. Every code means the
/// same to the caller (keep the conflict copy); they differ in what a person is told.
public enum DatabaseMergeErrorCode: String, ErrorCode {
    /// An input does not start with the SQLite 3 header.
    case notDatabase
    /// The schema (tables, indexes, views, triggers, text encoding) differs between the
    /// versions, or both sides set `user_version` or `application_id` differently.
    case schemaChanged
    /// A database this merge cannot reason about by table and key: a virtual table (FTS,
    /// R*Tree), a primary key with NULL in it, a table whose rowid has no name left.
    case unsupported
    /// Both sides changed one row differently, inserted one key with different values, or
    /// one deleted a row the other changed; or applying our change broke a UNIQUE, CHECK
    /// or NOT NULL constraint.
    case conflict
    /// The merged database fails `PRAGMA integrity_check`, has foreign key violations that
    /// neither side had, or its schema came out different from theirs.
    case integrity
    /// SQLite failed opening, reading or writing a database, or a file could not be
    /// copied or created.
    case sqlite
}

public typealias DatabaseMergeError = CodedError<DatabaseMergeErrorCode>
