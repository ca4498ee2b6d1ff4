import Synchronization

/// Durations in buckets (Prometheus histogram semantics: each bucket counts the
/// observations at most its bound), recorded with atomics only.
public final class Histogram: Sendable {
    /// Upper bounds in seconds, from 50 µs to 60 s: kernel requests sit at the low end,
    /// store round trips and commits in the middle and far end.
    public static let latencyBounds: [Double] = [
        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]

    private final class Cell: Sendable {
        let count = Atomic<UInt64>(0)
    }

    public let bounds: [Double]
    private let boundsInNanoseconds: [UInt64]
    /// One per bound, and one past the last (+Inf); not cumulative.
    private let cells: [Cell]
    private let sumNanoseconds = Atomic<UInt64>(0)

    public init(bounds: [Double] = Histogram.latencyBounds) {
        self.bounds = bounds
        boundsInNanoseconds = bounds.map { UInt64($0 * 1e9) }
        cells = (0...bounds.count).map { _ in Cell() }
    }

    public func observe(nanoseconds: UInt64) {
        var index = 0
        while index < boundsInNanoseconds.count && nanoseconds > boundsInNanoseconds[index] { index += 1 }
        cells[index].count.add(1, ordering: .relaxed)
        sumNanoseconds.add(nanoseconds, ordering: .relaxed)
    }

    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(nanoseconds: UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000))
    }

    /// Cumulative counts per bound (the last is +Inf, the total), and the sum in seconds.
    /// Read without a lock: a scrape during observations may see a count whose sum is not
    /// in yet, which Prometheus tolerates.
    public var snapshot: (cumulative: [UInt64], sum: Double) {
        var running: UInt64 = 0
        let cumulative = cells.map { cell -> UInt64 in
            running += cell.count.load(ordering: .relaxed)
            return running
        }
        return (cumulative, Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9)
    }
}
