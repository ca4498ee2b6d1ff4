/// An explicit pin state (`user.ubiqfs.pinned` set to 1 or 0) as folders pass it on.
/// On a shared mount (`--allow-other`) a state another user set on a folder reaches only
/// the items below that they could change themselves: their pin does not fill the disk
/// with someone's private files, their unpin does not take someone's pin away.
public struct PinState: Sendable, Hashable {
    public var pinned: Bool
    /// Nil when the mount's owner or root set it: it reaches every item below.
    public var setter: PinSetter?

    public init(pinned: Bool, setter: PinSetter?) {
        self.pinned = pinned
        self.setter = setter
    }

    public func reaches(_ row: ItemRow) -> Bool {
        setter.map { row.changeable(byUID: $0.uid, gid: $0.gid) } ?? true
    }
}

/// Another user who set a pin state: their uid and primary group.
public struct PinSetter: Sendable, Hashable {
    public var uid: Int64
    public var gid: Int64

    public init(uid: Int64, gid: Int64) {
        self.uid = uid
        self.gid = gid
    }
}
