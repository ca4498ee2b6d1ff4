/// What a collection found and did (`ubiqfs gc`), and the store's use as it measured it
/// (`ubiqfs status`). Bytes are those of objects (`blocks/`, `packs/`); inline content and
/// records are not counted.
public struct CollectionReport: Sendable, Codable, Equatable {
    /// Nanoseconds since 1970, when the mark was made.
    public var time: Int64 = 0
    /// Bytes of objects that live items, versions within retention and the trash name.
    public var live: Int64 = 0
    public var history: Int64 = 0
    public var trash: Int64 = 0
    /// Bytes of every object, and of those nothing names (before this run deleted them).
    public var stored: Int64 = 0
    public var garbage: Int64 = 0
    public var condemned = 0
    public var deleted = 0
    public var deletedBytes: Int64 = 0
    /// Condemned objects a record named during the grace period: kept.
    public var rescued = 0
    /// Repacking: packs emptied because they were mostly garbage, the blobs moved out of
    /// them (a record of `relocate` moves) and the bytes copied into new packs.
    public var repacked: Int?
    public var relocated: Int?
    public var repackedBytes: Int64?
    /// Named blobs a repack found not matching their name (left where they are).
    public var unreadableBlobs: Int?
    /// The journal compaction: records replaced by tombstones, and the checkpoint they
    /// now end at.
    public var recordsCompacted: Int?
    public var compactedThrough: UInt64?

    public init() {}
}
