internal import CFuse3

/// Who made a request. uid/gid/pid are not meaningful for writeback writes and forget.
public struct FuseContext: Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    public var umask: UInt32

    public init(uid: UInt32, gid: UInt32, pid: Int32, umask: UInt32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.umask = umask
    }

    init(_ context: fuse_ctx) {
        self.init(uid: context.uid, gid: context.gid, pid: context.pid, umask: context.umask)
    }
}
