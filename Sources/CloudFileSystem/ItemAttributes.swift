import Inodes
import ItemModel

/// An item as `stat` shows it, independent of FUSE.
public struct ItemAttributes: Sendable, Hashable {
    public var ino: Inode
    public var kind: ItemKind
    public var permissions: UInt32
    public var nlink: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    /// 512-byte blocks really on this disk: 0 for a placeholder.
    public var blocks: Int64
    public var atime: Int64
    public var mtime: Int64
    public var ctime: Int64
    /// The device number of a device node, else 0.
    public var rdev: UInt64 = 0
}
