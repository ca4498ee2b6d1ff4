import DatabaseMerge

/// The randomized test's oracle: what the merge of three snapshots must give, computed in
/// plain dictionaries. Per key, ours' row wins where theirs left it as in base, theirs'
/// where ours did, and the two must agree otherwise; ours' winning changes then go into
/// theirs' rows in the merge's documented order (deletes, updates, inserts, each by key,
/// tables by name), a UNIQUE value taken at that moment being a conflict. A foreign key
/// violation of the result that neither ours nor theirs had fails it.
struct MergeModel {
    /// A change of ours the merge applies.
    struct Change {
        enum Kind { case delete, update, insert }
        let table: TableSpec
        let kind: Kind
        let key: [Value]
    }

    enum Outcome {
        case merged(Snapshot, DatabaseMergeReport, applied: [Change])
        /// The code, and the table the message must start with.
        case failure(DatabaseMergeErrorCode, table: String)
    }

    let schema: [TableSpec]

    func outcome(base: Snapshot, ours: Snapshot, theirs: Snapshot) -> Outcome {
        var merged = theirs
        var applied: [Change] = []
        for table in schema.sorted(by: { $0.name < $1.name }) {
            guard let (rows, changes) = merge(table, base: base, ours: ours, theirs: theirs) else {
                return .failure(.conflict, table: table.name)
            }
            merged.tables[table.name] = rows
            applied += changes
        }
        merged.sequence = ours.sequence.merging(theirs.sequence, uniquingKeysWith: max)
        if let table = schema.sorted(by: { $0.name < $1.name }).first(where: { hasNewViolation($0, merged: merged, ours: ours, theirs: theirs) }) {
            return .failure(.integrity, table: table.name)
        }
        let count = { (kind: Change.Kind) in applied.filter { $0.kind == kind }.count }
        let tables = Set(applied.map(\.table.name)).sorted()
        return .merged(merged, DatabaseMergeReport(inserted: count(.insert), updated: count(.update), deleted: count(.delete), tables: tables), applied: applied)
    }

    /// One table's merged rows and ours' changes in them, or nil for a conflict.
    private func merge(_ table: TableSpec, base: Snapshot, ours: Snapshot, theirs: Snapshot) -> ([[Value]: [Value]], [Change])? {
        let (b, o, t) = (base.tables[table.name] ?? [:], ours.tables[table.name] ?? [:], theirs.tables[table.name] ?? [:])
        var changes: [Change] = []
        for key in Set(b.keys).union(o.keys).union(t.keys).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            if o[key] == b[key] || o[key] == t[key] { continue }
            if t[key] != b[key] { return nil }
            let kind: Change.Kind = o[key] == nil ? .delete : b[key] == nil ? .insert : .update
            changes.append(Change(table: table, kind: kind, key: key))
        }
        let ordered = [Change.Kind.delete, .update, .insert].flatMap { kind in changes.filter { $0.kind == kind } }
        var rows = t
        for change in ordered {
            guard let row = o[change.key] else {
                rows[change.key] = nil
                continue
            }
            if takesUniqueValue(row, of: change.key, in: rows, table) { return nil }
            rows[change.key] = row
        }
        return (rows, ordered)
    }

    /// Whether another row holds the row's UNIQUE value already, as SQLite compares them.
    private func takesUniqueValue(_ row: [Value], of key: [Value], in rows: [[Value]: [Value]], _ table: TableSpec) -> Bool {
        guard let column = table.columns.firstIndex(of: "u") else { return false }
        return rows.contains { $0.key != key && $0.value[column].sqliteEquals(row[column]) }
    }

    private func hasNewViolation(_ table: TableSpec, merged: Snapshot, ours: Snapshot, theirs: Snapshot) -> Bool {
        !violations(table, merged).subtracting(violations(table, ours)).subtracting(violations(table, theirs)).isEmpty
    }

    /// The rows whose `p` refers to no row of the parent: their keys and `p`.
    func violations(_ table: TableSpec, _ snapshot: Snapshot) -> Set<[Value]> {
        guard let parent = table.parent, let column = table.columns.firstIndex(of: "p") else { return [] }
        let parents = snapshot.tables[parent] ?? [:]
        return Set((snapshot.tables[table.name] ?? [:]).compactMap { key, row in
            row[column] == .null || parents[[row[column]]] != nil ? nil : key + [row[column]]
        })
    }
}
