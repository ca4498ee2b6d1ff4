/// One holder or waiter as `ubiqfs locks` prints it; plain strings and numbers so it
/// encodes to stable JSON.
public struct LeaseHolderInfo: Sendable, Hashable, Codable {
    /// Who asked, as passed to `acquire(_:owner:)` (e.g. "fuse read ino 42", "sync apply 1234").
    public var owner: String
    /// "shared" or "exclusive".
    public var access: String
    /// When the lease was granted (holders) or the wait began (waiters), in seconds since 1970.
    public var since: Double

    public init(owner: String, access: String, since: Double) {
        self.owner = owner
        self.access = access
        self.since = since
    }
}
