internal import CFuse3

/// The attributes a `setattr` changes; nil means "leave alone" (decoded from FUSE_SET_ATTR_* bits).
public struct FuseSetAttributes: Sendable {
    public var mode: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    /// truncate / ftruncate, or O_TRUNC when ATOMIC_O_TRUNC is off.
    public var size: UInt64?
    public var atime: FuseTimeChange?
    public var mtime: FuseTimeChange?
    public var ctime: FuseTimespec?
    /// With HANDLE_KILLPRIV the filesystem must itself clear set-user-ID / set-group-ID.
    public var killSuid: Bool
    public var killSgid: Bool

    public init(
        mode: UInt32? = nil,
        uid: UInt32? = nil,
        gid: UInt32? = nil,
        size: UInt64? = nil,
        atime: FuseTimeChange? = nil,
        mtime: FuseTimeChange? = nil,
        ctime: FuseTimespec? = nil,
        killSuid: Bool = false,
        killSgid: Bool = false
    ) {
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.atime = atime
        self.mtime = mtime
        self.ctime = ctime
        self.killSuid = killSuid
        self.killSgid = killSgid
    }

    init(_ attr: stat, toSet: Int32) {
        func has(_ bit: Int32) -> Bool { toSet & bit != 0 }
        self.init(
            mode: has(FUSE_SET_ATTR_MODE) ? attr.st_mode : nil,
            uid: has(FUSE_SET_ATTR_UID) ? attr.st_uid : nil,
            gid: has(FUSE_SET_ATTR_GID) ? attr.st_gid : nil,
            size: has(FUSE_SET_ATTR_SIZE) ? UInt64(clamping: attr.st_size) : nil,
            atime: has(FUSE_SET_ATTR_ATIME_NOW) ? .now
                : has(FUSE_SET_ATTR_ATIME) ? .time(FuseTimespec(attr.st_atim)) : nil,
            mtime: has(FUSE_SET_ATTR_MTIME_NOW) ? .now
                : has(FUSE_SET_ATTR_MTIME) ? .time(FuseTimespec(attr.st_mtim)) : nil,
            ctime: has(FUSE_SET_ATTR_CTIME) ? FuseTimespec(attr.st_ctim) : nil,
            killSuid: has(FUSE_SET_ATTR_KILL_SUID),
            killSgid: has(FUSE_SET_ATTR_KILL_SGID)
        )
    }
}
