internal import Glibc
import Inodes

/// The attributes of one inode, as the kernel sees them (`struct stat`).
public struct FuseAttributes: Sendable {
    public var ino: Inode
    /// The full `st_mode`, file type bits (S_IFREG, S_IFDIR, ...) included.
    public var mode: UInt32
    public var nlink: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: UInt64
    /// Allocated space in 512-byte units (what `du` reports).
    public var blocks: UInt64
    /// Preferred I/O size.
    public var blockSize: UInt32
    public var atime: FuseTimespec
    public var mtime: FuseTimespec
    public var ctime: FuseTimespec
    /// Device number, only meaningful for character and block device nodes.
    public var rdev: UInt64

    public init(
        ino: Inode,
        mode: UInt32,
        nlink: UInt32 = 1,
        uid: UInt32 = 0,
        gid: UInt32 = 0,
        size: UInt64 = 0,
        blocks: UInt64 = 0,
        blockSize: UInt32 = 4096,
        atime: FuseTimespec = FuseTimespec(seconds: 0, nanoseconds: 0),
        mtime: FuseTimespec = FuseTimespec(seconds: 0, nanoseconds: 0),
        ctime: FuseTimespec = FuseTimespec(seconds: 0, nanoseconds: 0),
        rdev: UInt64 = 0
    ) {
        self.ino = ino
        self.mode = mode
        self.nlink = nlink
        self.uid = uid
        self.gid = gid
        self.size = size
        self.blocks = blocks
        self.blockSize = blockSize
        self.atime = atime
        self.mtime = mtime
        self.ctime = ctime
        self.rdev = rdev
    }

    var statValue: stat {
        var value = stat()
        value.st_ino = __ino_t(ino.rawValue)
        value.st_mode = mode
        value.st_nlink = __nlink_t(nlink)
        value.st_uid = uid
        value.st_gid = gid
        value.st_rdev = __dev_t(rdev)
        value.st_size = __off_t(clamping: size)
        value.st_blocks = __blkcnt_t(clamping: blocks)
        value.st_blksize = __blksize_t(blockSize)
        value.st_atim = atime.timespecValue
        value.st_mtim = mtime.timespecValue
        value.st_ctim = ctime.timespecValue
        return value
    }
}
