import GRDB

/// A number the app keeps in the database header (`user_version`, often its schema version;
/// `application_id`): a side that set it alone wins, both setting it differently is a schema
/// change.
struct HeaderNumber {
    let pragma: String

    static let all = [HeaderNumber(pragma: "user_version"), HeaderNumber(pragma: "application_id")]

    /// The value to write over theirs', already in the output; nil when theirs' stands.
    func merged(_ db: Database) throws(DatabaseMergeError) -> Int? {
        let values = try Sides { side throws(DatabaseMergeError) in
            try db.step("reading \(pragma) of \(side)") { try Int.fetchOne(db, sql: "PRAGMA \(side.rawValue).\(pragma)") ?? 0 }
        }
        if values.ours == values.base || values.ours == values.theirs { return nil }
        if values.theirs == values.base { return values.ours }
        throw DatabaseMergeError(
            code: .schemaChanged, message: "\(pragma) set to \(values.ours) in ours and to \(values.theirs) in theirs (\(values.base) in base)"
        )
    }

    func write(_ value: Int, _ db: Database) throws(DatabaseMergeError) {
        try db.step("writing \(pragma)") { try db.execute(sql: "PRAGMA main.\(pragma) = \(value)") }
    }
}
