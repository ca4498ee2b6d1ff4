/// Names in users' databases may be anything (spaces, quotes, keywords), so every table and
/// column name goes into SQL quoted.
enum SQLName {
    /// `name` as an SQL identifier: in double quotes, a double quote doubled.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    /// `alias.column` for each column, comma-separated; bare names without an alias.
    static func list(_ columns: [String], of alias: String? = nil) -> String {
        columns.map { (alias.map { $0 + "." } ?? "") + quoted($0) }.joined(separator: ", ")
    }

    /// The terms joined by AND, as a balanced tree: SQLite limits an expression's depth (1000
    /// by default), which a flat chain of a wide table's column comparisons would reach.
    static func all(_ terms: [String]) -> String {
        guard terms.count > 2 else { return terms.joined(separator: " AND ") }
        let middle = terms.count / 2
        return "(\(all(Array(terms[..<middle])))) AND (\(all(Array(terms[middle...]))))"
    }
}
