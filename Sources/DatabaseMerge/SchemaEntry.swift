import GRDB

/// One row of `sqlite_schema` as the schema gate compares it. Not its `rootpage`, which the
/// order of creation or a VACUUM changes while the schema stays the same. Not the
/// `sqlite_stat` tables ANALYZE makes: advisory, theirs' stand.
struct SchemaEntry: Hashable, Comparable {
    let type: String
    let name: String
    let table: String
    let sql: String?

    /// The entries of one attached database (`main`, `ours`...).
    static func read(_ db: Database, schema: String) throws(DatabaseMergeError) -> Set<SchemaEntry> {
        let rows = try db.step("reading the schema of \(schema)") {
            try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM \(schema).sqlite_master")
        }
        return Set(rows.map { SchemaEntry(type: $0["type"], name: $0["name"], table: $0["tbl_name"], sql: $0["sql"]) }
            .filter { !$0.name.lowercased().hasPrefix("sqlite_stat") })
    }

    static func < (a: SchemaEntry, b: SchemaEntry) -> Bool {
        (a.name, a.type, a.table, a.sql ?? "") < (b.name, b.type, b.table, b.sql ?? "")
    }

    /// A table of the app's, not one of SQLite's own (`sqlite_sequence`...).
    var isUserTable: Bool {
        type == "table" && !name.lowercased().hasPrefix("sqlite_")
    }
}
