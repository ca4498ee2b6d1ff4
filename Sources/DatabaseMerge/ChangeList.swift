import GRDB

/// Ours' changes to one table since base, each judged against theirs, in a temporary table
/// so that keys never pass through Swift (GRDB reads text as `String`, which would mend
/// invalid UTF-8 and stop at NUL; a key must come back byte for byte). Its rowids order the
/// changes: deletes, then updates, then inserts, each by key, so that the same three inputs
/// apply the same statements in the same order.
struct ChangeList {
    /// What ours did to a row since base.
    enum Kind: Int {
        case delete = 0, update, insert
    }

    /// What theirs did to the same row, and so what the merge does with ours' change.
    enum Verdict: Int {
        /// Theirs left the row as it was in base (or never had the key): apply ours'.
        case apply = 0
        /// Theirs made the same change: it is already in the output.
        case same
        case changedOnBothSides
        case deletedInOursChangedInTheirs
        case changedInOursDeletedInTheirs
        case insertedOnBothSides

        var message: String {
            switch self {
            case .apply, .same: "applies"
            case .changedOnBothSides: "changed on both sides"
            case .deletedInOursChangedInTheirs: "deleted in ours and changed in theirs"
            case .changedInOursDeletedInTheirs: "changed in ours and deleted in theirs"
            case .insertedOnBothSides: "inserted on both sides with different values"
            }
        }
    }

    static let table = "temp.ubiqfs_change"

    let shape: TableShape

    /// The key's column `index` in the change list (user column names may be anything).
    static func keyColumn(_ index: Int) -> String {
        "k\(index)"
    }

    var keyColumns: [String] {
        shape.key.indices.map(Self.keyColumn)
    }

    /// Lists ours' changes to `shape`'s table, with their verdicts.
    static func build(_ db: Database, shape: TableShape) throws(DatabaseMergeError) -> ChangeList {
        let list = ChangeList(shape: shape)
        try db.step("listing the changes of table \(shape.name)") {
            try db.execute(sql: "CREATE TEMP TABLE ubiqfs_change(kind INTEGER, verdict INTEGER, \(list.keyColumns.joined(separator: ", ")))")
            for select in [list.deletes, list.updates, list.inserts] {
                try db.execute(sql: "INSERT INTO \(table)(kind, verdict, \(list.keyColumns.joined(separator: ", "))) \(select)")
            }
        }
        return list
    }

    /// Keys in base and not in ours. Theirs deleted it too, left it, or changed it.
    private var deletes: String {
        select(
            .delete, from: "\(shape.table(in: "base")) AS b", source: "b",
            where: "NOT EXISTS (SELECT 1 FROM \(shape.table(in: "ours")) AS o WHERE \(shape.sameKey("o", "b")))",
            verdicts: [("t.\(firstKey) IS NULL", .same), (shape.sameRow("t", "b"), .apply)], otherwise: .deletedInOursChangedInTheirs
        )
    }

    /// Keys in base and ours whose rows differ.
    private var updates: String {
        select(
            .update, from: "\(shape.table(in: "ours")) AS o JOIN \(shape.table(in: "base")) AS b ON \(shape.sameKey("b", "o"))", source: "o",
            where: "NOT (\(shape.sameRow("o", "b")))",
            verdicts: [("t.\(firstKey) IS NULL", .changedInOursDeletedInTheirs), (shape.sameRow("t", "b"), .apply), (shape.sameRow("t", "o"), .same)],
            otherwise: .changedOnBothSides
        )
    }

    /// Keys in ours and not in base.
    private var inserts: String {
        select(
            .insert, from: "\(shape.table(in: "ours")) AS o", source: "o",
            where: "NOT EXISTS (SELECT 1 FROM \(shape.table(in: "base")) AS b WHERE \(shape.sameKey("b", "o")))",
            verdicts: [("t.\(firstKey) IS NULL", .apply), (shape.sameRow("t", "o"), .same)], otherwise: .insertedOnBothSides
        )
    }

    /// The changes of one kind: the keys of `source` (an alias in `from`) where `condition`
    /// holds, by key, with theirs' row of the same key (`t`, all NULL where theirs has none)
    /// judged by the first of `verdicts` whose condition holds.
    private func select(
        _ kind: Kind, from: String, source: String, where condition: String, verdicts: [(String, Verdict)], otherwise: Verdict
    ) -> String {
        let cases = verdicts.map { "WHEN \($0.0) THEN \($0.1.rawValue)" }.joined(separator: " ")
        return """
            SELECT \(kind.rawValue), CASE \(cases) ELSE \(otherwise.rawValue) END, \(SQLName.list(shape.key, of: source))
            FROM \(from) LEFT JOIN \(shape.table(in: "theirs")) AS t ON \(shape.sameKey("t", source))
            WHERE \(condition) ORDER BY \(SQLName.list(shape.key, of: source))
            """
    }

    /// A key column that is NULL only where a LEFT JOIN found no row.
    private var firstKey: String {
        SQLName.quoted(shape.key[0])
    }

    /// The first change both sides made differently, as an error naming the table and key.
    func checkConflicts(_ db: Database) throws(DatabaseMergeError) {
        let conflict = try db.step("reading the changes of table \(shape.name)") {
            try Row.fetchOne(
                db, sql: "SELECT rowid, verdict FROM \(Self.table) WHERE verdict > \(Verdict.same.rawValue) ORDER BY rowid LIMIT 1"
            )
        }
        guard let conflict, let verdict = Verdict(rawValue: conflict["verdict"]) else { return }
        let key = try describeKey(db, change: conflict["rowid"])
        throw DatabaseMergeError(code: .conflict, message: "table \(shape.name): row \(key) \(verdict.message)")
    }

    /// The changes to apply, in order: their rowids in the list, and kinds.
    func pending(_ db: Database) throws(DatabaseMergeError) -> [(change: Int64, kind: Kind)] {
        try db.step("reading the changes of table \(shape.name)") {
            try Row.fetchAll(db, sql: "SELECT rowid, kind FROM \(Self.table) WHERE verdict = \(Verdict.apply.rawValue) ORDER BY rowid")
                .compactMap { row in Kind(rawValue: row["kind"]).map { (row["rowid"], $0) } }
        }
    }

    /// A change's key for messages, "(id=5)".
    func describeKey(_ db: Database, change: Int64) throws(DatabaseMergeError) -> String {
        let values = try db.step("reading the changes of table \(shape.name)") {
            let quotes = keyColumns.map { "quote(\($0))" }.joined(separator: ", ")
            return try Row.fetchOne(db, sql: "SELECT \(quotes) FROM \(Self.table) WHERE rowid = ?", arguments: [change])
                .map { row in row.databaseValues.map { String.fromDatabaseValue($0) ?? "?" } } ?? []
        }
        return shape.describe(key: values)
    }

    /// SQL that is true where `column`'s key equals the key of change `?1` in the list: one
    /// constant subquery per key column, so SQLite finds the row through the key's index.
    func keyMatches(change parameter: String = "?1") -> String {
        shape.key.indices.map { index in
            "\(SQLName.quoted(shape.key[index])) = (SELECT \(Self.keyColumn(index)) FROM \(Self.table) WHERE rowid = \(parameter))"
        }.joined(separator: " AND ")
    }

    func drop(_ db: Database) throws(DatabaseMergeError) {
        try db.step("dropping the change list of table \(shape.name)") { try db.execute(sql: "DROP TABLE \(Self.table)") }
    }
}
