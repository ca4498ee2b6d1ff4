/// What changed locally since the item's committed version: the push turns these
/// observations into journal operations (we persist state, not a queue of work).
public struct DirtyFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Name, parent, mode, mtime, xattrs or symlink target.
    public static let metadata = DirtyFlags(rawValue: 1)
    /// The bytes of a file.
    public static let content = DirtyFlags(rawValue: 2)
    /// Only a folder's mtime, moved by a name in it changing: its upsert goes with that
    /// change, but it is no edit of the folder (a delete elsewhere still takes it, and
    /// what is inside is not kept with it).
    public static let times = DirtyFlags(rawValue: 4)
    /// Changes a person made to the item itself: all but `times`.
    public static let edits: DirtyFlags = [.metadata, .content]

    public var edited: Bool { !isDisjoint(with: .edits) }
}
