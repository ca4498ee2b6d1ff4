import MetadataStore

/// Who asked: owners of new items come from here, and `ubiqfs locks` shows the pid.
public struct Caller: Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }

    /// Whether the mode bits let this caller write the item, as the kernel would judge
    /// them with only the caller's primary group known (a supplementary group that could
    /// write it is not: the narrower answer, for effects the caller did not ask per file).
    func mayWrite(_ row: ItemRow) -> Bool {
        if uid == 0 { return true }
        if row.uid == Int64(uid) { return row.mode & 0o200 != 0 }
        if row.gid == Int64(gid) { return row.mode & 0o020 != 0 }
        return row.mode & 0o002 != 0
    }
}
