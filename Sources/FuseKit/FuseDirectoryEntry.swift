import Inodes
/// One name in a directory listing.
public struct FuseDirectoryEntry: Sendable {
    /// The name's bytes, without a NUL (names are bytes, not necessarily UTF-8).
    public var name: [UInt8]
    public var ino: Inode
    /// At least the file type bits (S_IFDIR, S_IFREG, ...); the kernel uses only those.
    public var mode: UInt32
    /// The offset the kernel passes back to continue after this entry; never 0, and stable.
    public var nextOffset: UInt64

    public init(name: [UInt8], ino: Inode, mode: UInt32, nextOffset: UInt64) {
        self.name = name
        self.ino = ino
        self.mode = mode
        self.nextOffset = nextOffset
    }
}
