import GRDB

/// Writes ours' changes to one table into the output, one row per statement so that a
/// constraint the row breaks is reported with its key. Values go from `ours.t` to `main.t`
/// inside SQLite, never through Swift. `OR ABORT` overrides a table's own conflict clause: an
/// `ON CONFLICT REPLACE` would otherwise silently delete theirs' row that collides.
struct ChangeApplier {
    let changes: ChangeList

    private var shape: TableShape { changes.shape }

    private var delete: String {
        "DELETE FROM \(shape.table(in: "main")) WHERE \(changes.keyMatches())"
    }

    private var update: String {
        """
        UPDATE OR ABORT \(shape.table(in: "main")) SET (\(SQLName.list(shape.columns))) =
            (SELECT \(SQLName.list(shape.columns)) FROM \(shape.table(in: "ours")) WHERE \(changes.keyMatches()))
        WHERE \(changes.keyMatches())
        """
    }

    private var insert: String {
        """
        INSERT OR ABORT INTO \(shape.table(in: "main")) (\(SQLName.list(shape.columns)))
            SELECT \(SQLName.list(shape.columns)) FROM \(shape.table(in: "ours")) WHERE \(changes.keyMatches())
        """
    }

    /// Applies the pending changes in the list's order; what was applied, counted.
    func apply(_ db: Database) throws(DatabaseMergeError) -> DatabaseMergeReport {
        let pending = try changes.pending(db)
        var report = DatabaseMergeReport(tables: pending.isEmpty ? [] : [shape.name])
        guard !pending.isEmpty else { return report }
        let (deleting, updating, inserting) = try db.step("preparing the changes of table \(shape.name)") {
            (try db.makeStatement(sql: delete), try db.makeStatement(sql: update), try db.makeStatement(sql: insert))
        }
        for (change, kind) in pending {
            switch kind {
            case .delete:
                try run(deleting, change: change, db)
                report.deleted += db.changesCount
            case .update:
                try run(updating, change: change, db)
                report.updated += db.changesCount
            case .insert:
                try run(inserting, change: change, db)
                report.inserted += db.changesCount
            }
        }
        return report
    }

    /// One change; a constraint it breaks (UNIQUE with a row of theirs, say) is a conflict.
    private func run(_ statement: Statement, change: Int64, _ db: Database) throws(DatabaseMergeError) {
        do {
            try statement.execute(arguments: [change])
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
            let key = try changes.describeKey(db, change: change)
            throw DatabaseMergeError(
                code: .conflict, message: "table \(shape.name): row \(key) of ours breaks a constraint: \(error.message ?? "\(error)")", cause: error
            )
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: "applying a change to table \(shape.name)", cause: error)
        }
    }
}
