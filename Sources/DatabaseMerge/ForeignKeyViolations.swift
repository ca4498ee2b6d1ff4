import GRDB

/// Foreign key violations of the merged database that neither side had: a row one side
/// added that refers to a row the other deleted. An app that never turns foreign keys on may
/// have violations already; those the merge carries over are no reason to keep a copy.
///
/// `PRAGMA foreign_key_check` finds the violations but names a row only by rowid (none for
/// a WITHOUT ROWID table, and a rowid that may differ between devices). So for each foreign
/// key it reports, the violating rows are listed in all three databases by the merge's key
/// and the values that refer, and those of the output must all be ours' or theirs'.
enum ForeignKeyViolations {
    /// One violation: the child row's key and its referring values, as SQL literals.
    struct Violation: Hashable, Comparable {
        let key: [String]
        let reference: [String]

        static func < (a: Violation, b: Violation) -> Bool {
            (a.key + a.reference).lexicographicallyPrecedes(b.key + b.reference)
        }
    }

    static func check(_ db: Database) throws(DatabaseMergeError) {
        let reported = try db.step("foreign_key_check of the result") {
            try Row.fetchAll(db, sql: "PRAGMA main.foreign_key_check").map { row -> ForeignKey in ForeignKey(table: row[0], id: row[3]) }
        }
        for foreignKey in Set(reported).sorted() {
            try check(foreignKey, db)
        }
    }

    private static func check(_ foreignKey: ForeignKey, _ db: Database) throws(DatabaseMergeError) {
        let query = try ViolationQuery.read(foreignKey, db)
        let merged = try query.violations(in: "main", db)
        guard !merged.isEmpty else {
            throw DatabaseMergeError(
                code: .integrity, message: "table \(foreignKey.table): foreign_key_check reports violations of foreign key \(foreignKey.id) not found by key"
            )
        }
        let before = try query.violations(in: "ours", db).union(query.violations(in: "theirs", db))
        if let new = merged.subtracting(before).sorted().first {
            throw DatabaseMergeError(
                code: .integrity,
                message: "table \(foreignKey.table): row \(query.child.describe(key: new.key)) refers to a missing row of \(query.parent)"
            )
        }
    }
}
