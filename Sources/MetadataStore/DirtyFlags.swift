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
    /// With `metadata` alone: the item's only change is that its own name went, and it took
    /// the place of one of its links (`FileSystemCore.removeName`). Pushed as a move, but no
    /// edit: another device's delete of every name still takes it. Any other change of the
    /// item drops it (`ItemRow.markChanged`).
    public static let nameRemoved = DirtyFlags(rawValue: 8)
    /// Changes a person made to the item itself: all but `times` and a name removed.
    public static let edits: DirtyFlags = [.metadata, .content]

    public var edited: Bool { !isDisjoint(with: .edits) && subtracting(.times) != [.metadata, .nameRemoved] }
}
