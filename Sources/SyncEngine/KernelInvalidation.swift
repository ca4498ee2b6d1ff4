/// A kernel cache entry that a sync step made stale. Collected while leases are held,
/// sent by the filesystem's notifier after they are released.
public enum KernelInvalidation: Sendable, Hashable {
    /// Attributes, and cached data too when `data` is set.
    case inode(Int64, data: Bool)
    /// A name in a folder (now pointing elsewhere, or nowhere).
    case entry(parent: Int64, name: [UInt8])
    /// A folder's cached listing (the kernel keeps listings across opens). The notifier
    /// adds one for the parent of every `entry`: the kernel drops a listing itself only
    /// when the name was in its dentry cache.
    case listing(Int64)
}

/// Where invalidations go: the filesystem's single notifier.
public protocol InvalidationSink: Sendable {
    func invalidate(_ invalidations: [KernelInvalidation])
}
