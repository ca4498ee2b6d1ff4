import GRDB

/// `sqlite_sequence`, AUTOINCREMENT's counters: each table's counter is the larger of ours'
/// and theirs', so no id either side handed out is handed out again. The output (theirs'
/// copy, with ours' inserted rows) may already count past theirs: SQLite moved the counter
/// on as ours' rows went in, never past ours' own counter.
enum SequenceMerge {
    static func apply(_ db: Database) throws(DatabaseMergeError) {
        let ours = "(SELECT max(o.seq) FROM ours.sqlite_sequence AS o WHERE o.name = main.sqlite_sequence.name)"
        try db.step("merging sqlite_sequence") {
            try db.execute(sql: "UPDATE main.sqlite_sequence SET seq = \(ours) WHERE seq < \(ours)")
            try db.execute(sql: """
                INSERT INTO main.sqlite_sequence(name, seq)
                SELECT o.name, max(o.seq) FROM ours.sqlite_sequence AS o
                WHERE NOT EXISTS (SELECT 1 FROM main.sqlite_sequence AS m WHERE m.name = o.name)
                GROUP BY o.name ORDER BY o.name
                """)
        }
    }
}
