import Synchronization

/// A count that only goes up while the process lives (Prometheus resets are restarts):
/// one relaxed atomic add, so recording costs nothing a kernel request would notice.
public final class Counter: Sendable {
    private let count = Atomic<UInt64>(0)

    public init() {}

    public func add(_ amount: UInt64 = 1) {
        count.add(amount, ordering: .relaxed)
    }

    public var value: UInt64 { count.load(ordering: .relaxed) }
}
