import GRDB

/// The output's triggers, dropped while ours' changes are applied and created again from
/// their exact text before the commit. Ours' rows already hold what its triggers did; firing
/// them again in the output would do it twice (a counter counted twice, a log row logged
/// twice). SQLite has no switch that stops triggers, but its DDL is transactional.
/// They are created again in the order they were made (their order in `sqlite_schema`):
/// triggers on one event fire in an order that follows it.
struct SuspendedTriggers {
    /// Name and `CREATE TRIGGER` text, in the schema's order.
    let triggers: [(name: String, sql: String)]

    static func suspend(_ db: Database) throws(DatabaseMergeError) -> SuspendedTriggers {
        try db.step("suspending the triggers") {
            let triggers = try Row.fetchAll(db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger' ORDER BY rowid")
                .map { row -> (name: String, sql: String) in (row["name"], row["sql"]) }
            for trigger in triggers {
                try db.execute(sql: "DROP TRIGGER main.\(SQLName.quoted(trigger.name))")
            }
            return SuspendedTriggers(triggers: triggers)
        }
    }

    func restore(_ db: Database) throws(DatabaseMergeError) {
        for trigger in triggers {
            try db.step("creating trigger \(trigger.name) again") { try db.execute(sql: trigger.sql) }
        }
    }
}
