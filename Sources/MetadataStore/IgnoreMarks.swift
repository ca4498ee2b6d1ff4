/// Why an item stays on this device (issue "ignored items"): it is never pushed, and its
/// name never reaches the store. Stored in `item.ignored`; empty for an item that syncs.
public struct IgnoreMarks: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A pattern or a `.nosync` name says so, or a folder above it is ignored.
    public static let rule = IgnoreMarks(rawValue: 1)
    /// `user.ubiqfs.ignored` was set on it.
    public static let attribute = IgnoreMarks(rawValue: 2)
}

extension ItemRow {
    /// Why the item stays on this device; empty if it syncs.
    public var ignoreMarks: IgnoreMarks {
        get { IgnoreMarks(rawValue: ignored) }
        set { ignored = newValue.rawValue }
    }

    /// Whether the item stays on this device, never pushed.
    public var isIgnored: Bool { ignored != 0 }
}
