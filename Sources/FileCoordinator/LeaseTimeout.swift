import Inodes

/// A timed blocking acquisition gave up. Everything it had acquired was released
/// before this was thrown, so the caller holds nothing.
public struct LeaseTimeout: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key it was waiting for when the deadline passed.
    public var key: Inode
    /// The owner that gave up.
    public var owner: String
    /// How long it waited in total.
    public var waited: Duration
    /// Who held `key` when it gave up (the likely culprit).
    public var blockers: [LeaseHolderInfo]

    public init(key: Inode, owner: String, waited: Duration, blockers: [LeaseHolderInfo]) {
        self.key = key
        self.owner = owner
        self.waited = waited
        self.blockers = blockers
    }

    /// `waited` in seconds, as shown in logs.
    public var waitedSeconds: Double {
        let (seconds, attoseconds) = waited.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    public var description: String {
        let held = blockers.map { "\($0.owner) (\($0.access))" }.joined(separator: ", ")
        return "\(owner) gave up waiting for lease \(key) after \(waitedSeconds) s; held by: \(held.isEmpty ? "nobody" : held)"
    }
}
