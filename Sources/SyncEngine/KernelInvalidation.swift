import Inodes

/// A kernel cache entry that a sync step made stale. Collected while leases are held,
/// sent by the filesystem's notifier after they are released.
public enum KernelInvalidation: Sendable, Hashable {
    /// Attributes, and cached data too when `data` is set (a folder's data is its cached listing).
    case inode(Inode, data: Bool)
    /// A name in a folder (now pointing elsewhere, or nowhere).
    case entry(parent: Inode, name: [UInt8])
}

/// Where invalidations go: the filesystem's single notifier.
public protocol InvalidationSink: Sendable {
    func invalidate(_ invalidations: [KernelInvalidation])
}
