/// `gc/<run>.condemned`: what a collector found unreferenced (format 2) and will delete
/// once a grace period has passed. Writers read every such list and never name an object
/// in one (they write the bytes anew under a fresh key): that, with the grace period, is
/// what keeps a record from naming a deleted object (docs/CONTAINER-FORMAT.md).
public struct CondemnedList: Hashable, Sendable, Codable {
    public var run: String
    public var device: String
    /// The journal position the mark was computed at.
    public var head: UInt64
    /// Nanoseconds since 1970 (the collector's clock): when a swept list may go.
    public var created: Int64
    /// Object keys (`blocks/<hash>`, `packs/<id>`) and their total size.
    public var keys: [String]
    public var bytes: Int64
    /// Set once the sweep is done: the list stays a week longer, so a writer whose push
    /// started before the sweep still learns what went.
    public var swept: Bool?

    public init(run: String, device: String, head: UInt64, created: Int64, keys: [String], bytes: Int64) {
        self.run = run
        self.device = device
        self.head = head
        self.created = created
        self.keys = keys
        self.bytes = bytes
    }
}
