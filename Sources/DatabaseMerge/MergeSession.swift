import GRDB

/// One merge on the output's connection: theirs' copy opened read-write with the three
/// inputs' copies attached, the schema gate, ours' changes in one transaction, the checks,
/// and a checkpoint so that closing leaves the output file alone as the whole database.
enum MergeSession {
    static func run(_ output: OutputFile, inputs: Sides<String>) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let queue = try open(output.path)
        let report: DatabaseMergeReport
        do {
            report = try queue.inDatabase { db in try merge(db, inputs: inputs) }
        } catch {
            // The merge's error is the one to report; the caller removes the output next.
            try? queue.close()
            throw error as? DatabaseMergeError ?? DatabaseMergeError(code: .sqlite, message: "merging into \(output.path)", cause: error)
        }
        do {
            try queue.close()
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: "closing \(output.path)", cause: error)
        }
        try output.settle()
        return report
    }

    /// Foreign keys off (GRDB turns them on by default); double-quoted string literals
    /// accepted as SQLite accepts them by default, since apps' triggers, views and CHECKs
    /// may use them and the triggers are created again from their text.
    private static func open(_ path: String) throws(DatabaseMergeError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        configuration.acceptsDoubleQuotedStringLiterals = true
        configuration.label = "ubiqfs.DatabaseMerge"
        do {
            return try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: "opening \(path)", cause: error)
        }
    }

    private static func merge(_ db: Database, inputs: Sides<String>) throws(DatabaseMergeError) -> DatabaseMergeReport {
        for side in Side.allCases {
            try db.step("attaching \(side)") { try db.execute(sql: "ATTACH DATABASE ? AS \(side.rawValue)", arguments: [inputs[side]]) }
        }
        let schema = try SchemaGate.check(db)
        let report = try MergeTransaction.apply(db, schema: schema)
        try IntegrityGate.check(db, schema: schema)
        try checkpoint(db)
        return report
    }

    /// In WAL mode the commit is in the `-wal` file; TRUNCATE copies it all into the
    /// database and empties the WAL.
    private static func checkpoint(_ db: Database) throws(DatabaseMergeError) {
        try db.step("checkpointing the result") {
            guard try String.fetchOne(db, sql: "PRAGMA main.journal_mode") == "wal" else { return }
            let busy = try Int.fetchOne(db, sql: "PRAGMA main.wal_checkpoint(TRUNCATE)") ?? 1
            if busy != 0 {
                throw DatabaseMergeError(code: .sqlite, message: "the result's checkpoint could not complete")
            }
        }
    }
}
