import Synchronization

/// Throttling replies a store received (S3's `SlowDown`, HTTP 429 and 503), counted so
/// that whoever schedules transfers can back off: the store retries such a request
/// itself, and the count is the one trace of it that reaches the scheduler.
public final class StoreCongestion: Sendable {
    private let throttles = Atomic<UInt64>(0)

    public init() {}

    /// How many throttling replies the store has had; compared before and after a call.
    public var count: UInt64 { throttles.load(ordering: .relaxed) }

    public func noteThrottled() {
        throttles.add(1, ordering: .relaxed)
    }
}
