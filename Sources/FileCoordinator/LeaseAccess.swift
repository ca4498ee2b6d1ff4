/// What a lease allows: many readers share an item, one writer excludes everybody else.
public enum LeaseAccess: Sendable, Hashable {
    /// Reading: coexists with other shared leases on the same key.
    case shared
    /// Writing or swapping content/metadata: excludes every other lease on the key.
    case exclusive

    /// The spelling used by `ubiqfs locks` and in `LeaseHolderInfo`.
    public var name: String {
        switch self {
        case .shared: "shared"
        case .exclusive: "exclusive"
        }
    }
}
