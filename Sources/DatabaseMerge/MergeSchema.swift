/// What the schema gate let through: the schema all three versions share (theirs' entries,
/// to compare the output's against after the merge) and the header numbers ours changed.
struct MergeSchema {
    let entries: Set<SchemaEntry>
    let headerWrites: [(number: HeaderNumber, value: Int)]

    /// The app's tables, in the order the merge goes through them.
    var tables: [String] {
        entries.filter(\.isUserTable).map(\.name).sorted()
    }

    var hasSequence: Bool {
        entries.contains { $0.type == "table" && $0.name == "sqlite_sequence" }
    }
}
