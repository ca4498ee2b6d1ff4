import GRDB

/// A database's contents as the model sees them: each table's rows by key (every column,
/// keys first, as `TableSpec.columns`) and the AUTOINCREMENT counters.
struct Snapshot: Equatable {
    var tables: [String: [[Value]: [Value]]]
    var sequence: [String: Int64]

    init(tables: [String: [[Value]: [Value]]], sequence: [String: Int64]) {
        self.tables = tables
        self.sequence = sequence
    }

    init(path: String, schema: [TableSpec]) throws {
        let queue = try DatabaseQueue(path: path, configuration: DatabaseFixture.configuration)
        defer { try? queue.close() }
        var tables: [String: [[Value]: [Value]]] = [:]
        var sequence: [String: Int64] = [:]
        try queue.inDatabase { db in
            for table in schema {
                tables[table.name] = try Self.rows(of: table, db)
            }
            if try db.tableExists("sqlite_sequence") {
                for row in try Row.fetchAll(db, sql: "SELECT name, seq FROM sqlite_sequence") {
                    sequence[row[0]] = row[1]
                }
            }
        }
        self.init(tables: tables, sequence: sequence)
    }

    private static func rows(of table: TableSpec, _ db: Database) throws -> [[Value]: [Value]] {
        var rows: [[Value]: [Value]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)") {
            let values: [Value] = row.databaseValues.map { Value($0) }
            rows[Array(values.prefix(table.keyColumns.count))] = values
        }
        return rows
    }

    /// How two snapshots differ, for a failure message; nil when they are equal.
    func difference(from expected: Snapshot) -> String? {
        for (name, rows) in expected.tables.sorted(by: { $0.key < $1.key }) where tables[name] != rows {
            let actual = tables[name] ?? [:]
            let missing = rows.filter { actual[$0.key] != $0.value }.map(\.value)
            let extra = actual.filter { rows[$0.key] != $0.value }.map(\.value)
            return "table \(name): expected but missing \(missing), present but not expected \(extra)"
        }
        return sequence == expected.sequence ? nil : "sqlite_sequence \(sequence), expected \(expected.sequence)"
    }
}
