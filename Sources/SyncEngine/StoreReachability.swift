import Dispatch
import Synchronization

/// Whether the store answered lately, shared by the sync loop, the uploads and the
/// downloads: a failed cycle or download marks it offline (`ubiqfs status` says so), and
/// while it is offline opening a placeholder first makes one bounded check instead of a
/// download that fails block by block. When it last answered bounds the last push of an
/// unmount: a store that stopped answering does not hold the unmount for long.
public final class StoreReachability: Sendable {
    private let online = Atomic<Bool>(true)
    /// `DispatchTime` uptime nanoseconds of the last answer; 0 before any.
    private let lastAnswer = Atomic<UInt64>(0)

    public init() {}

    public var isOnline: Bool { online.load(ordering: .relaxed) }

    func set(online value: Bool) { online.store(value, ordering: .relaxed) }

    /// The store answered a call (with data, or with a definite refusal).
    func noteAnswer() { lastAnswer.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }

    /// How long the store has said nothing, counted from `since` if it answered before then.
    func silence(since start: DispatchTime) -> Duration {
        let last = max(lastAnswer.load(ordering: .relaxed), start.uptimeNanoseconds)
        return .nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds &- last))
    }
}
