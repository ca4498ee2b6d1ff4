internal import Glibc

/// Filesystem-wide numbers for `df` and `statfs(2)` (`struct statvfs`).
public struct FuseStatfs: Sendable {
    public var blockSize: UInt64
    /// The unit of `blocks`, `blocksFree` and `blocksAvailable`.
    public var fragmentSize: UInt64
    public var blocks: UInt64
    public var blocksFree: UInt64
    /// Free blocks an unprivileged user may use.
    public var blocksAvailable: UInt64
    public var files: UInt64
    public var filesFree: UInt64
    public var nameMax: UInt64

    public init(
        blockSize: UInt64 = 4096,
        fragmentSize: UInt64 = 4096,
        blocks: UInt64 = 0,
        blocksFree: UInt64 = 0,
        blocksAvailable: UInt64 = 0,
        files: UInt64 = 0,
        filesFree: UInt64 = 0,
        nameMax: UInt64 = 255
    ) {
        self.blockSize = blockSize
        self.fragmentSize = fragmentSize
        self.blocks = blocks
        self.blocksFree = blocksFree
        self.blocksAvailable = blocksAvailable
        self.files = files
        self.filesFree = filesFree
        self.nameMax = nameMax
    }

    var statvfsValue: statvfs {
        var value = statvfs()
        value.f_bsize = UInt(blockSize)
        value.f_frsize = UInt(fragmentSize)
        value.f_blocks = __fsblkcnt_t(blocks)
        value.f_bfree = __fsblkcnt_t(blocksFree)
        value.f_bavail = __fsblkcnt_t(blocksAvailable)
        value.f_files = __fsfilcnt_t(files)
        value.f_ffree = __fsfilcnt_t(filesFree)
        value.f_favail = __fsfilcnt_t(filesFree)
        value.f_namemax = UInt(nameMax)
        return value
    }
}
