import FuseKit
import Metrics
import Synchronization

/// Times every kernel request from arrival to reply, by operation (the metrics'
/// `ubiqfs_fuse_request_duration_seconds`), and knows whether the mount still answers:
/// requests waiting while nothing was replied for 30 s means a daemon that no longer
/// serves (`/healthz`).
public final class FuseRequestTimings: FuseRequestObserver {
    private let stuckAfter: UInt64
    private let histograms: [FuseOperationKind: Histogram]
    private let inFlight = Atomic<Int>(0)
    /// The last reply, or the arrival of a request when none was waiting: the last sign of
    /// progress, so a mount idle for an hour is not stuck at its next request.
    private let lastProgress = Atomic<UInt64>(0)
    private let errors = Counter()

    /// `stuckAfter`: nanoseconds without a reply while requests wait (30 s).
    public init(stuckAfter: UInt64 = 30_000_000_000) {
        self.stuckAfter = stuckAfter
        histograms = Dictionary(uniqueKeysWithValues: FuseOperationKind.allCases.map { ($0, Histogram()) })
        lastProgress.store(MonotonicClock.nanoseconds, ordering: .relaxed)
    }

    public func started(_ operation: FuseOperationKind) {
        if inFlight.add(1, ordering: .relaxed).newValue == 1 {
            lastProgress.store(MonotonicClock.nanoseconds, ordering: .relaxed)
        }
    }

    public func finished(_ operation: FuseOperationKind, nanoseconds: UInt64, error: Int32) {
        histograms[operation]?.observe(nanoseconds: nanoseconds)
        if error != 0 { errors.add() }
        inFlight.subtract(1, ordering: .relaxed)
        lastProgress.store(MonotonicClock.nanoseconds, ordering: .relaxed)
    }

    /// Operations that were asked at least once, with their histograms.
    public var byOperation: [(operation: String, histogram: Histogram)] {
        histograms.filter { $0.value.snapshot.cumulative.last ?? 0 > 0 }
            .map { ($0.key.rawValue, $0.value) }.sorted { $0.operation < $1.operation }
    }

    /// Replies with an error (`ubiqfs_fuse_request_errors_total`).
    public var errorReplies: UInt64 { errors.value }

    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }

    /// Why the mount does not answer, or nil when it does.
    public var stuck: String? {
        let waiting = inFlight.load(ordering: .relaxed)
        let progress = lastProgress.load(ordering: .relaxed)
        let now = MonotonicClock.nanoseconds
        let quiet = now > progress ? now - progress : 0
        guard waiting > 0, quiet > stuckAfter else { return nil }
        return "\(waiting) kernel requests wait and none was answered for \(quiet / 1_000_000_000) s"
    }
}
