/// What a file manager shows of one item of a folder (its emblem), answered for a whole
/// folder at once so a view of 10,000 items costs one request, not 30,000 xattr reads.
public struct ItemStateSummary: Sendable, Codable, Equatable {
    public var name: String
    /// The word of `user.ubiqfs.state` (docs/XATTRS.md).
    public var state: String
    /// The effective pin, as `user.ubiqfs.pinned`.
    public var pinned: Bool
    /// The item has conflict copies beside it (`user.ubiqfs.conflicts` has a value).
    public var conflicts: Bool
    /// The item is itself a conflict copy of an item beside it.
    public var conflictCopy: Bool
    /// As `user.ubiqfs.progress`.
    public var progress: Int

    public init(name: String, state: String, pinned: Bool, conflicts: Bool, conflictCopy: Bool, progress: Int) {
        self.name = name
        self.state = state
        self.pinned = pinned
        self.conflicts = conflicts
        self.conflictCopy = conflictCopy
        self.progress = progress
    }
}
