/// What a merge took from ours: the rows it inserted, updated and deleted in theirs, and
/// the tables it changed. A change both sides made alike is already in theirs and not
/// counted.
public struct DatabaseMergeReport: Sendable, Equatable {
    public var inserted: Int
    public var updated: Int
    public var deleted: Int
    /// The tables ours' changes were applied to, sorted by name.
    public var tables: [String]

    public init(inserted: Int = 0, updated: Int = 0, deleted: Int = 0, tables: [String] = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.tables = tables
    }
}

extension DatabaseMergeReport {
    /// Adds one table's counts (its tables kept sorted by the caller's order).
    mutating func add(_ other: DatabaseMergeReport) {
        inserted += other.inserted
        updated += other.updated
        deleted += other.deleted
        tables += other.tables
    }
}
