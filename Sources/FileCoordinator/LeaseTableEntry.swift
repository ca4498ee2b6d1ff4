import Inodes

/// One key of the lease table as seen by `FileCoordinator.snapshot()`: who holds it and
/// who waits for it, so a stuck operation can be traced to the one blocking it.
public struct LeaseTableEntry: Sendable, Hashable, Codable {
    public var key: Inode
    /// Current holders, in the order they were granted.
    public var holders: [LeaseHolderInfo]
    /// Waiters in queue order: the first is granted next.
    public var waiters: [LeaseHolderInfo]

    public init(key: Inode, holders: [LeaseHolderInfo], waiters: [LeaseHolderInfo]) {
        self.key = key
        self.holders = holders
        self.waiters = waiters
    }
}
