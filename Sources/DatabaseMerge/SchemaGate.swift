import GRDB

/// A merge by table and key means something only where the three versions share one
/// schema: a table, column, index, view or trigger added, dropped or changed on a side is
/// an app's migration, whose effect on rows we cannot know, so it keeps the copy.
enum SchemaGate {
    /// ATTACH refuses a database in another text encoding than the output's; a database
    /// cannot change its encoding, so one that differs was made anew: a schema change.
    static func checkEncodings(_ headers: Sides<DatabaseHeader>) throws(DatabaseMergeError) {
        for side in [Side.ours, .theirs] where headers[side].textEncoding != headers.base.textEncoding {
            throw DatabaseMergeError(code: .schemaChanged, message: "the text encoding differs between base and \(side)")
        }
    }

    /// The shared schema, once the attached versions are found to have one.
    static func check(_ db: Database) throws(DatabaseMergeError) -> MergeSchema {
        let entries = try Sides { side throws(DatabaseMergeError) in try SchemaEntry.read(db, schema: side.rawValue) }
        for side in [Side.ours, .theirs] {
            if let entry = entries.base.symmetricDifference(entries[side]).sorted().first {
                throw DatabaseMergeError(code: .schemaChanged, message: "schema differs between base and \(side): \(entry.type) \(entry.name)")
            }
        }
        try checkNoVirtualTables(db)
        var writes: [(number: HeaderNumber, value: Int)] = []
        for number in HeaderNumber.all {
            if let value = try number.merged(db) { writes.append((number, value)) }
        }
        return MergeSchema(entries: entries.theirs, headerWrites: writes)
    }

    /// A virtual table (FTS, R*Tree) keeps its rows in shadow tables its module owns: rows
    /// merged one by one would not match the module's own bookkeeping.
    private static func checkNoVirtualTables(_ db: Database) throws(DatabaseMergeError) {
        let virtual = try db.step("reading the schema") {
            try String.fetchOne(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND rootpage = 0 ORDER BY name LIMIT 1")
        }
        if let virtual {
            throw DatabaseMergeError(code: .unsupported, message: "table \(virtual) is a virtual table")
        }
    }
}
