/// A setattr request in the filesystem's terms (times in nanoseconds; nil = unchanged).
public struct AttributeChanges: Sendable {
    public enum Time: Sendable {
        case now
        case at(Int64)
    }

    public var mode: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: Int64?
    public var atime: Time?
    public var mtime: Time?

    public init(mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: Int64? = nil, atime: Time? = nil, mtime: Time? = nil) {
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.atime = atime
        self.mtime = mtime
    }
}
