import GRDB

/// How the merge identifies and compares the rows of one table, read from theirs' copy (the
/// schema gate has made all three versions' schemas the same).
///
/// The key is what names a row on every device: the declared primary key of a WITHOUT ROWID
/// table or of a rowid table whose key is not an alias of the rowid (there the rowid itself
/// may differ between devices for one key, so it is neither compared nor carried); the rowid
/// otherwise, under the first of its names no column takes. The columns are those stored
/// and written: generated columns are SQLite's to compute.
struct TableShape {
    let name: String
    let key: [String]
    /// Every stored column, with the rowid first where it is the key and no column names it.
    let columns: [String]
    /// A declared primary key of a rowid table, which SQLite (for old apps' sake) lets hold NULL.
    let keyMayBeNull: Bool

    static func read(_ db: Database, table: String) throws(DatabaseMergeError) -> TableShape {
        let quoted = SQLName.quoted(table)
        let (info, withoutRowid, keyIndexes) = try db.step("reading the columns of table \(table)") {
            (
                try Row.fetchAll(db, sql: "PRAGMA main.table_xinfo(\(quoted))"),
                try Bool.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [table]) ?? false,
                try Row.fetchAll(db, sql: "PRAGMA main.index_list(\(quoted))").filter { ($0["origin"] as String?) == "pk" }.count
            )
        }
        let names: [String] = info.map { $0["name"] }
        let stored: [String] = info.filter { ($0["hidden"] as Int) == 0 }.map { $0["name"] }
        let primaryKey: [String] = info.filter { ($0["pk"] as Int) > 0 }.sorted { ($0["pk"] as Int) < ($1["pk"] as Int) }.map { $0["name"] }
        // A single-column key without an index of its own is the rowid under a name
        // (INTEGER PRIMARY KEY); `INTEGER PRIMARY KEY DESC` and other types get an index.
        if withoutRowid || (primaryKey.count == 1 && keyIndexes == 0) {
            return TableShape(name: table, key: primaryKey, columns: stored, keyMayBeNull: false)
        }
        if !primaryKey.isEmpty {
            return TableShape(name: table, key: primaryKey, columns: stored, keyMayBeNull: true)
        }
        let taken = Set(names.map { $0.lowercased() })
        guard let rowid = ["rowid", "_rowid_", "oid"].first(where: { !taken.contains($0) }) else {
            throw DatabaseMergeError(code: .unsupported, message: "table \(table): its columns take every name of the rowid")
        }
        return TableShape(name: table, key: [rowid], columns: [rowid] + stored, keyMayBeNull: false)
    }

    /// `table` of one attached database (`main`, `ours`...), quoted.
    func table(in schema: String) -> String {
        schema + "." + SQLName.quoted(name)
    }

    /// Rows `a` and `b` (aliases) have equal keys, as the table's own collations compare them.
    func sameKey(_ a: String, _ b: String) -> String {
        key.map { "\(a).\(SQLName.quoted($0)) = \(b).\(SQLName.quoted($0))" }.joined(separator: " AND ")
    }

    /// Rows `a` and `b` hold exactly the same values: NULLs equal, types count (1, 1.0 and
    /// '1' differ), text and blobs compared byte for byte whatever the column's collation.
    /// An absent row (all NULL from a LEFT JOIN) equals no present one, whose key is not NULL.
    func sameRow(_ a: String, _ b: String) -> String {
        SQLName.all(columns.map { column in
            let (x, y) = ("\(a).\(SQLName.quoted(column))", "\(b).\(SQLName.quoted(column))")
            return "(\(x) IS \(y) COLLATE BINARY AND typeof(\(x)) = typeof(\(y)))"
        })
    }

    /// The message's name of a key's values, each already an SQL literal (`quote()`): "(id=5)".
    func describe(key values: [String]) -> String {
        "(" + zip(key, values).map { "\($0)=\($1)" }.joined(separator: ", ") + ")"
    }

    /// NULL in a declared primary key names no row: two such rows cannot be told apart.
    func checkKeysNotNull(_ db: Database) throws(DatabaseMergeError) {
        guard keyMayBeNull else { return }
        let anyNull = key.map { "\(SQLName.quoted($0)) IS NULL" }.joined(separator: " OR ")
        for side in Side.allCases {
            let found = try db.step("reading table \(name) of \(side)") {
                try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table(in: side.rawValue)) WHERE \(anyNull) LIMIT 1") ?? false
            }
            if found {
                throw DatabaseMergeError(code: .unsupported, message: "table \(name): a row of \(side) has NULL in its primary key")
            }
        }
    }
}
