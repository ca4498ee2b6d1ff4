internal import CFuse3

/// Kernel features (FUSE_CAP_*), as offered by the kernel (`capable`) and asked for by the filesystem (`want`).
public struct FuseCapabilities: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Several reads of one file may be in flight at once.
    public static let asyncRead = FuseCapabilities(rawValue: UInt32(FUSE_CAP_ASYNC_READ))
    /// Remote POSIX locks (needs getlk/setlk, which FuseKit does not register: locks stay local).
    public static let posixLocks = FuseCapabilities(rawValue: UInt32(FUSE_CAP_POSIX_LOCKS))
    /// `open` receives O_TRUNC and must truncate itself instead of getting a separate setattr.
    public static let atomicOTrunc = FuseCapabilities(rawValue: UInt32(FUSE_CAP_ATOMIC_O_TRUNC))
    /// Lookups of "." and ".." may arrive (NFS export).
    public static let exportSupport = FuseCapabilities(rawValue: UInt32(FUSE_CAP_EXPORT_SUPPORT))
    /// The kernel does not apply the umask on create; the filesystem must.
    public static let dontMask = FuseCapabilities(rawValue: UInt32(FUSE_CAP_DONT_MASK))
    public static let spliceWrite = FuseCapabilities(rawValue: UInt32(FUSE_CAP_SPLICE_WRITE))
    public static let spliceMove = FuseCapabilities(rawValue: UInt32(FUSE_CAP_SPLICE_MOVE))
    public static let spliceRead = FuseCapabilities(rawValue: UInt32(FUSE_CAP_SPLICE_READ))
    /// Remote flock (needs the flock op, which FuseKit does not register).
    public static let flockLocks = FuseCapabilities(rawValue: UInt32(FUSE_CAP_FLOCK_LOCKS))
    public static let ioctlDirectory = FuseCapabilities(rawValue: UInt32(FUSE_CAP_IOCTL_DIR))
    /// The kernel drops cached pages when it sees mtime or size change on getattr.
    public static let autoInvalidateData = FuseCapabilities(rawValue: UInt32(FUSE_CAP_AUTO_INVAL_DATA))
    /// Listings carry attributes and take lookup references (readdir with `plus: true`).
    public static let readdirplus = FuseCapabilities(rawValue: UInt32(FUSE_CAP_READDIRPLUS))
    /// With `readdirplus`: let the kernel choose plain readdir or readdirplus per call.
    public static let readdirplusAuto = FuseCapabilities(rawValue: UInt32(FUSE_CAP_READDIRPLUS_AUTO))
    public static let asyncDirectIO = FuseCapabilities(rawValue: UInt32(FUSE_CAP_ASYNC_DIO))
    /// The kernel buffers writes in the page cache and sends them later (writepage).
    public static let writebackCache = FuseCapabilities(rawValue: UInt32(FUSE_CAP_WRITEBACK_CACHE))
    public static let noOpenSupport = FuseCapabilities(rawValue: UInt32(FUSE_CAP_NO_OPEN_SUPPORT))
    /// Lookups and readdirs in one directory may run concurrently.
    public static let parallelDirectoryOperations = FuseCapabilities(rawValue: UInt32(FUSE_CAP_PARALLEL_DIROPS))
    public static let posixACL = FuseCapabilities(rawValue: UInt32(FUSE_CAP_POSIX_ACL))
    /// The filesystem clears suid/sgid itself on write, chown and truncate.
    public static let handleKillPriv = FuseCapabilities(rawValue: UInt32(FUSE_CAP_HANDLE_KILLPRIV))
    public static let cacheSymlinks = FuseCapabilities(rawValue: UInt32(FUSE_CAP_CACHE_SYMLINKS))
    public static let noOpendirSupport = FuseCapabilities(rawValue: UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT))
    /// The kernel never drops cached data on its own; only notify_inval_inode does.
    public static let explicitInvalidateData = FuseCapabilities(rawValue: UInt32(FUSE_CAP_EXPLICIT_INVAL_DATA))
}
