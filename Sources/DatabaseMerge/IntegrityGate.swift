import GRDB

/// The checks of the merged database before it is handed back: SQLite finds it sound, it
/// has theirs' schema (triggers came back as they were), and it breaks no foreign key that
/// neither side broke.
enum IntegrityGate {
    static func check(_ db: Database, schema: MergeSchema) throws(DatabaseMergeError) {
        let report = try db.step("integrity_check of the result") { try String.fetchAll(db, sql: "PRAGMA main.integrity_check") }
        guard report == ["ok"] else {
            throw DatabaseMergeError(code: .integrity, message: "integrity_check: " + report.prefix(5).joined(separator: "; "))
        }
        if let entry = try SchemaEntry.read(db, schema: "main").symmetricDifference(schema.entries).sorted().first {
            throw DatabaseMergeError(code: .integrity, message: "the result's schema differs from theirs: \(entry.type) \(entry.name)")
        }
        try ForeignKeyViolations.check(db)
    }
}
