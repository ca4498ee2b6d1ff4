import Foundation

/// The committed state of one item as the journal and checkpoints carry it. It holds
/// only what is meaningful on every device: no inode numbers, owners or local state.
public struct ItemSnapshot: Hashable, Sendable, Codable {
    public var id: ItemID
    public var parent: ItemID
    public var name: ByteString
    public var kind: ItemKind
    /// Permission bits only (0o7777 at most; setuid/setgid are stripped on apply).
    public var mode: UInt32
    /// Modification time in nanoseconds since the epoch.
    public var mtime: Int64
    public var size: Int64
    /// Content blocks in order, for files; their lengths add up to `size`.
    public var blocks: [BlockReference]?
    /// Format 5, in a journal record only: the blocks as an edit of the file's last ones
    /// (`BlockSplice`), in place of `blocks`; a reader expands it before anything else.
    public var splice: BlockSplice?
    public var target: ByteString?
    /// User extended attributes (`user.*` names only), values as bytes.
    public var xattrs: [String: Data]?
    /// Largest value of one user xattr (64 KiB, as Linux allows).
    public static let maxXattrValue = 65536
    /// All of an item's user xattrs, names and values: every record of the item carries the
    /// whole set, so it is bounded; past it setxattr gives ENOSPC, as on ext4.
    public static let maxXattrTotal = 256 * 1024

    /// The one spelling an xattr name is kept under: NFC, since names that differ only in
    /// Unicode normalisation are one key of a record's JSON object. ASCII (nearly every
    /// name) is NFC already and skips Foundation's normalisation on the getxattr path.
    public static func xattrName(_ name: String) -> String {
        name.utf8.allSatisfy { $0 < 0x80 } ? name : name.precomposedStringWithCanonicalMapping
    }
    /// The device number of a character or block device (Linux `dev_t`).
    public var rdev: UInt64?
    /// A link's item: the one it is another name of (format 3).
    public var of: ItemID?
    /// Files: pictures of this content (format 3), each of another size.
    public var thumbnails: [Thumbnail]?

    /// Every blob the item names: its content and its thumbnails (what collection keeps).
    public var namedBlocks: [BlockReference] {
        (blocks ?? []) + (splice?.newBlocks ?? []) + (thumbnails ?? []).flatMap(\.blocks)
    }

    public init(
        id: ItemID, parent: ItemID, name: ByteString, kind: ItemKind, mode: UInt32, mtime: Int64,
        size: Int64, blocks: [BlockReference]? = nil, target: ByteString? = nil, xattrs: [String: Data]? = nil,
        rdev: UInt64? = nil, of: ItemID? = nil
    ) {
        self.id = id
        self.parent = parent
        self.name = name
        self.kind = kind
        self.mode = mode
        self.mtime = mtime
        self.size = size
        self.blocks = blocks
        self.target = target
        self.xattrs = xattrs
        self.rdev = rdev
        self.of = of
    }

    /// A link: another name of `item`, with no attributes of its own (writers send zeros).
    public static func link(id: ItemID, parent: ItemID, name: ByteString, of item: ItemID) -> ItemSnapshot {
        ItemSnapshot(id: id, parent: parent, name: name, kind: .link, mode: 0, mtime: 0, size: 0, of: item)
    }
}
