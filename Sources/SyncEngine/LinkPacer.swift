/// Paces transfers to a bandwidth (`--bwlimit`): each transfer starts when the bytes
/// before it would have gone at that rate, so the average keeps to it. A transfer a reader
/// waits for starts at once and is charged to the ones after it; one that never moved
/// its bytes (cancelled, failed) gives its time back.
struct LinkPacer {
    let bytesPerSecond: Int64
    /// When the bytes reserved so far would have gone.
    private var linkFree: ContinuousClock.Instant?

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = bytesPerSecond
    }

    /// When a transfer of `bytes` may start.
    mutating func reserve(_ bytes: Int64, urgent: Bool, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let free = max(now, linkFree ?? now)
        linkFree = free + duration(of: bytes)
        return urgent ? now : free
    }

    /// A reservation whose bytes never moved.
    mutating func refund(_ bytes: Int64, now: ContinuousClock.Instant) {
        guard let free = linkFree else { return }
        linkFree = max(now, free - duration(of: bytes))
    }

    private func duration(of bytes: Int64) -> Duration {
        .milliseconds(Double(bytes) * 1000 / Double(bytesPerSecond))
    }
}
