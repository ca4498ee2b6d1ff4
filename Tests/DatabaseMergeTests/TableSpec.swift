/// One table of a generated schema: how its rows are keyed, and which of a UNIQUE column,
/// a foreign key and a trigger-kept edit counter it has.
struct TableSpec {
    enum Kind: CaseIterable {
        /// No declared key: rows are named by rowid.
        case rowid
        case integerKey
        case autoincrement
        /// A declared (text, integer) key of a rowid table, whose rowids may differ between sides.
        case compositeKey
        case withoutRowid
    }

    let name: String
    let kind: Kind
    let unique: Bool
    /// The table the column `p` refers to (its `id`), if any.
    let parent: String?
    /// A column `n` an AFTER UPDATE trigger counts edits of `a` in.
    let counted: Bool

    var keyColumns: [String] {
        switch kind {
        case .rowid: ["rowid"]
        case .integerKey, .autoincrement: ["id"]
        case .compositeKey: ["k1", "k2"]
        case .withoutRowid: ["k"]
        }
    }

    var valueColumns: [String] {
        ["a", "b"] + (unique ? ["u"] : []) + (parent == nil ? [] : ["p"]) + (counted ? ["n"] : [])
    }

    /// The columns the generator writes: all but the trigger's counter.
    var writableColumns: [String] {
        valueColumns.filter { $0 != "n" }
    }

    /// The columns the model reads and the merge writes, keys first.
    var columns: [String] {
        keyColumns + valueColumns
    }

    /// Whether the table's rows are keyed by integer ids, so other tables may refer to them.
    var hasIntegerID: Bool {
        kind == .integerKey || kind == .autoincrement
    }

    var createSQL: String {
        var columns: [String]
        switch kind {
        case .rowid: columns = []
        case .integerKey: columns = ["id INTEGER PRIMARY KEY"]
        case .autoincrement: columns = ["id INTEGER PRIMARY KEY AUTOINCREMENT"]
        case .compositeKey: columns = ["k1 TEXT NOT NULL", "k2 INTEGER NOT NULL"]
        case .withoutRowid: columns = ["k TEXT PRIMARY KEY"]
        }
        columns += ["a", "b"]
        if unique { columns.append("u UNIQUE") }
        if let parent { columns.append("p REFERENCES \(parent)(id)") }
        if counted { columns.append("n INTEGER NOT NULL DEFAULT 0") }
        if kind == .compositeKey { columns.append("PRIMARY KEY (k1, k2)") }
        var sql = "CREATE TABLE \(name)(\(columns.joined(separator: ", ")))\(kind == .withoutRowid ? " WITHOUT ROWID" : "");\n"
        if counted {
            let row = keyColumns.map { "\($0) = new.\($0)" }.joined(separator: " AND ")
            sql += "CREATE TRIGGER \(name)_edits AFTER UPDATE OF a ON \(name) BEGIN UPDATE \(name) SET n = n + 1 WHERE \(row); END;\n"
        }
        return sql
    }

    /// Every key the generator may use: few, so that both sides often pick the same.
    var keySpace: [[Value]] {
        switch kind {
        case .rowid, .integerKey, .autoincrement: (1...6).map { [.integer($0)] }
        case .compositeKey: ["a", "b", "c"].flatMap { text in (1...2).map { [.text(text), .integer($0)] } }
        case .withoutRowid: ["k1", "k2", "k3", "k4", "k5", "k6"].map { [.text($0)] }
        }
    }

    /// SQL that is true for the row with `key`.
    func matching(_ key: [Value]) -> String {
        zip(keyColumns, key).map { "\($0) = \($1)" }.joined(separator: " AND ")
    }

    func insert(key: [Value], values: [Value]) -> String {
        "INSERT INTO \(name)(\((keyColumns + writableColumns).joined(separator: ", "))) VALUES (\((key + values).map(\.description).joined(separator: ", ")))"
    }
}
