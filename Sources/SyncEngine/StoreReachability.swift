import Synchronization

/// Whether the store answered lately, shared by the sync loop and the downloads: a failed
/// cycle or download marks it offline (`ubiqfs status` says so), and while it is offline
/// opening a placeholder first makes one bounded check instead of a download that fails
/// block by block.
public final class StoreReachability: Sendable {
    private let online = Atomic<Bool>(true)

    public init() {}

    public var isOnline: Bool { online.load(ordering: .relaxed) }

    func set(online value: Bool) { online.store(value, ordering: .relaxed) }
}
