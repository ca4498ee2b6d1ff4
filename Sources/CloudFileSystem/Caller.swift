import Glibc
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

    /// Whether this caller could change the item itself (`ItemRow.changeable`): what a
    /// folder's evict and pin reach for them on a shared mount.
    func mayChange(_ row: ItemRow) -> Bool {
        row.changeable(byUID: Int64(uid), gid: Int64(gid))
    }

    /// How a pin state this caller sets is passed on: to everything below for the mount's
    /// owner and root, else only to what they could change.
    var pinSetter: PinSetter? {
        uid == 0 || uid == getuid() ? nil : PinSetter(uid: Int64(uid), gid: Int64(gid))
    }
}
