import ItemModel

/// Random cases for the merge: a schema of a few tables of mixed kinds (some referring to
/// others, some with a UNIQUE column or a trigger), a base with rows, and a few random
/// inserts, updates and deletes on each side. Small value and key pools, so that both sides
/// often touch the same row, pick the same key, or take the same unique value.
struct CaseGenerator {
    var rng: SplitMix64
    /// The keys of the base's rows, by table: the sides change and refer to them more often
    /// than to keys that may be absent.
    private var baseKeys: [String: [[Value]]] = [:]

    init(rng: SplitMix64) {
        self.rng = rng
    }

    static let values: [Value] = [.null, .integer(0), .integer(1), .integer(2), .real(1.0), .real(2.5), .text("x"), .text("1"), .blob([0]), .blob([1, 2])]
    static let uniqueValues: [Value] = [.null, .integer(1), .integer(2), .integer(3), .real(1.0), .text("x"), .text("y")]

    mutating func schema() -> [TableSpec] {
        var tables: [TableSpec] = []
        for index in 0..<(2 + rng.below(2)) {
            // Often a table others can refer to first, so that foreign keys are common.
            let kinds: [TableSpec.Kind] = index == 0 && rng.chance(70) ? [.integerKey, .autoincrement] : TableSpec.Kind.allCases
            let kind = rng.pick(kinds) ?? .rowid
            let parents = tables.filter(\.hasIntegerID).map(\.name)
            tables.append(TableSpec(
                name: "t\(index)", kind: kind, unique: rng.chance(30), parent: rng.chance(90) ? rng.pick(parents) : nil, counted: rng.chance(25)
            ))
        }
        return tables
    }

    /// The base's rows: each key of a table present with even odds.
    mutating func baseRows(_ tables: [TableSpec]) -> [String] {
        baseKeys = [:]
        return tables.flatMap { table in
            let keys = table.keySpace.filter { _ in rng.chance(50) }
            baseKeys[table.name] = keys
            return keys.map { table.insert(key: $0, values: values(for: table)) }
        }
    }

    /// A side's changes, as statements run one by one (SQLite refuses some, a UNIQUE value
    /// taken: the app could not have made those).
    mutating func changes(_ tables: [TableSpec]) -> [String] {
        (0..<(1 + rng.below(5))).compactMap { _ in
            guard let table = rng.pick(tables), let anyKey = rng.pick(table.keySpace) else { return nil }
            let key = rng.chance(70) ? rng.pick(baseKeys[table.name] ?? []) ?? anyKey : anyKey
            switch rng.below(4) {
            case 0: return table.insert(key: anyKey, values: values(for: table))
            case 1: return "DELETE FROM \(table.name) WHERE \(table.matching(key))"
            case 2 where table.parent != nil:
                // A row some row of this table refers to (the app keeps no foreign keys).
                let referring = "SELECT p FROM \(table.name) WHERE p IS NOT NULL ORDER BY \(table.keyColumns.joined(separator: ", ")) LIMIT 1 OFFSET \(rng.below(3))"
                return "DELETE FROM \(table.parent ?? "") WHERE id IN (\(referring))"
            default:
                let assignments = zip(table.writableColumns, values(for: table)).filter { _ in rng.chance(60) }
                guard !assignments.isEmpty else { return nil }
                return "UPDATE \(table.name) SET \(assignments.map { "\($0) = \($1)" }.joined(separator: ", ")) WHERE \(table.matching(key))"
            }
        }
    }

    /// A key of the parent's base rows, or 1 if it has none.
    private mutating func referredKey(_ table: TableSpec) -> Value {
        rng.pick(baseKeys[table.parent ?? ""] ?? [])?.first ?? .integer(1)
    }

    /// Values for the table's columns but the counter.
    private mutating func values(for table: TableSpec) -> [Value] {
        table.writableColumns.map { column in
            switch column {
            case "u": rng.pick(Self.uniqueValues) ?? .null
            case "p": rng.chance(20) ? .null : rng.chance(70) ? referredKey(table) : .integer(Int64(1 + rng.below(6)))
            default: rng.pick(Self.values) ?? .null
            }
        }
    }
}
