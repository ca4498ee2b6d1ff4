import GRDB

/// The rows of one foreign key's child table that refer to no row of its parent, listed in
/// any attached database: all referring columns not NULL, and no parent row whose key
/// equals them (compared as SQLite compares them, in the parent's collation).
struct ViolationQuery {
    let child: TableShape
    let parent: String
    let from: [String]
    let to: [String]
    /// A foreign key may name a table that does not exist; then every reference violates it.
    let parentExists: Bool

    static func read(_ foreignKey: ForeignKey, _ db: Database) throws(DatabaseMergeError) -> ViolationQuery {
        let child = try TableShape.read(db, table: foreignKey.table)
        return try db.step("reading foreign key \(foreignKey.id) of table \(foreignKey.table)") {
            let columns = try Row.fetchAll(db, sql: "PRAGMA main.foreign_key_list(\(SQLName.quoted(foreignKey.table)))")
                .filter { ($0["id"] as Int) == foreignKey.id }.sorted { ($0["seq"] as Int) < ($1["seq"] as Int) }
            let parent: String = columns.first?["table"] ?? ""
            let parentExists = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", arguments: [parent]
            ) ?? false
            var to: [String] = columns.compactMap { $0["to"] }
            if to.isEmpty && parentExists {
                // No columns named: the parent's primary key.
                to = try Row.fetchAll(db, sql: "PRAGMA main.table_info(\(SQLName.quoted(parent)))")
                    .filter { ($0["pk"] as Int) > 0 }.sorted { ($0["pk"] as Int) < ($1["pk"] as Int) }.map { $0["name"] }
            }
            return ViolationQuery(child: child, parent: parent, from: columns.map { $0["from"] }, to: to, parentExists: parentExists)
        }
    }

    func violations(in schema: String, _ db: Database) throws(DatabaseMergeError) -> Set<ForeignKeyViolations.Violation> {
        let quoted = (child.key + from).map { "quote(c.\(SQLName.quoted($0)))" }.joined(separator: ", ")
        var conditions = from.map { "c.\(SQLName.quoted($0)) IS NOT NULL" }
        if parentExists {
            let match = zip(to, from).map { "p.\(SQLName.quoted($0)) = c.\(SQLName.quoted($1))" }.joined(separator: " AND ")
            conditions.append("NOT EXISTS (SELECT 1 FROM \(schema).\(SQLName.quoted(parent)) AS p WHERE \(match))")
        }
        let rows = try db.step("listing the violations of a foreign key of table \(child.name) in \(schema)") {
            try Row.fetchAll(db, sql: "SELECT \(quoted) FROM \(child.table(in: schema)) AS c WHERE \(conditions.joined(separator: " AND "))")
        }
        return Set(rows.map { row in
            let values = row.databaseValues.map { String.fromDatabaseValue($0) ?? "" }
            return ForeignKeyViolations.Violation(key: Array(values.prefix(child.key.count)), reference: Array(values.dropFirst(child.key.count)))
        })
    }
}
