/// What changed locally since the item's committed version: the push turns these
/// observations into journal operations (we persist state, not a queue of work).
public struct DirtyFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Name, parent, mode, mtime, xattrs or symlink target.
    public static let metadata = DirtyFlags(rawValue: 1)
    /// The bytes of a file.
    public static let content = DirtyFlags(rawValue: 2)
}
