/// Bytes done over the last few seconds, in one bucket per second (however many
/// transfers end each second), for the rate `ubiqfs status` shows.
struct RateWindow {
    private static let seconds = 5
    private var buckets: [(second: Int64, bytes: Int64)] = []

    mutating func add(_ bytes: Int64, at now: ContinuousClock.Instant) {
        let second = Self.second(now)
        if let last = buckets.last, last.second == second {
            buckets[buckets.count - 1].bytes += bytes
        } else {
            buckets.append((second, bytes))
            if buckets.count > Self.seconds + 1 { buckets.removeFirst() }
        }
    }

    /// Bytes per second over the last five whole seconds and this one so far.
    func rate(at now: ContinuousClock.Instant) -> Int64 {
        let second = Self.second(now)
        let recent = buckets.filter { second - $0.second <= Int64(Self.seconds) }
        return recent.reduce(0) { $0 + $1.bytes } / Int64(Self.seconds)
    }

    /// Whole seconds since an origin of this process.
    private static func second(_ instant: ContinuousClock.Instant) -> Int64 {
        (instant - origin).components.seconds
    }

    private static let origin = ContinuousClock.Instant.now
}
