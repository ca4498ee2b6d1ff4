import GRDB

/// Ours' changes since base, written into theirs' copy in one transaction: with foreign keys
/// off (ours' rows already hold what its cascades did, and the order of tables is by name,
/// not by reference) and the triggers suspended (ours' rows already hold what they did).
enum MergeTransaction {
    static func apply(_ db: Database, schema: MergeSchema) throws(DatabaseMergeError) -> DatabaseMergeReport {
        try db.step("turning foreign keys off") { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
        var report = DatabaseMergeReport()
        try db.step("the merge's transaction") {
            try db.inTransaction(.immediate) {
                report = try applyChanges(db, schema: schema)
                return .commit
            }
        }
        return report
    }

    private static func applyChanges(_ db: Database, schema: MergeSchema) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let triggers = try SuspendedTriggers.suspend(db)
        var report = DatabaseMergeReport()
        for table in schema.tables {
            report.add(try applyChanges(db, table: table))
        }
        if schema.hasSequence {
            try SequenceMerge.apply(db)
        }
        for write in schema.headerWrites {
            try write.number.write(write.value, db)
        }
        try triggers.restore(db)
        return report
    }

    /// One table: its changes listed and judged, the first conflict thrown, the rest applied.
    private static func applyChanges(_ db: Database, table: String) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let shape = try TableShape.read(db, table: table)
        try shape.checkKeysNotNull(db)
        let changes = try ChangeList.build(db, shape: shape)
        try changes.checkConflicts(db)
        let report = try ChangeApplier(changes: changes).apply(db)
        try changes.drop(db)
        return report
    }
}
