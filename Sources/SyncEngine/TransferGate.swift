import ContainerStore
import Synchronization

/// Admits content transfers (block puts and gets) in one direction: at most `limit` at
/// once and `bytesInFlight` bytes in memory, paced to `bytesPerSecond` (`--bwlimit`).
/// Over a far store many small transfers must overlap to fill the link, so the limit
/// starts at the most allowed; a throttling reply (`StoreCongestion`) halves it, at most
/// once a second, and every `limit` transfers in a row without one raise it by one again
/// (additive increase, multiplicative decrease, as TCP does).
///
/// Waiters are served in order; a cancelled waiter leaves the queue at once. Lock order:
/// the gate's mutex is a leaf (nothing else is taken, nothing resumed, while held).
public final class TransferGate: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Transfers at once, at most.
        public var transfers: Int
        /// Bytes of the transfers running at once; a larger single transfer runs alone.
        public var bytesInFlight: Int64
        /// The pace of the bytes, or nil for as fast as the store goes.
        public var bytesPerSecond: Int64?

        public init(transfers: Int, bytesInFlight: Int64, bytesPerSecond: Int64? = nil) {
            self.transfers = max(1, transfers)
            self.bytesInFlight = max(1, bytesInFlight)
            self.bytesPerSecond = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        }
    }

    /// What `ubiqfs status` shows of one direction.
    public struct Snapshot: Sendable, Codable, Equatable {
        /// Transfers allowed at once now (lower than the most after throttling).
        public var limit: Int
        public var queued: Int
        public var queuedBytes: Int64
        public var running: Int
        public var runningBytes: Int64
        public var done: Int
        public var doneBytes: Int64
        /// Bytes per second over the last few seconds.
        public var rate: Int64
        /// Throttling replies seen by this direction's transfers.
        public var throttled: Int
        /// The bandwidth limit (`--bwlimit`), bytes per second; nil for none.
        public var pace: Int64?
    }

    private struct Waiter {
        var id: UInt64
        var bytes: Int64
        var urgent: Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var limit: Int
        var running = 0
        var runningBytes: Int64 = 0
        var waiters: [Waiter] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
        var done = 0
        var doneBytes: Int64 = 0
        var recent = RateWindow()
        var successes = 0
        var throttled = 0
        var lastDecrease: ContinuousClock.Instant?
        var seenThrottles: UInt64 = 0
        var pacer: LinkPacer?
    }

    public let limits: Limits
    private let congestion: StoreCongestion?
    private let state: Mutex<State>

    public init(_ limits: Limits, congestion: StoreCongestion?) {
        self.limits = limits
        self.congestion = congestion
        state = Mutex(State(limit: limits.transfers, seenThrottles: congestion?.count ?? 0, pacer: limits.bytesPerSecond.map(LinkPacer.init)))
    }

    /// A transfer `admit` let in: it must `finish` once, done or failed. `bytes` is what
    /// was admitted (an upper bound, held in memory); the transfer may move fewer.
    final class Ticket: Sendable {
        let gate: TransferGate
        let bytes: Int64
        let urgent: Bool
        /// The bytes reserved under the bandwidth limit, given back if the transfer fails.
        private let paced = Mutex<Int64>(0)

        init(gate: TransferGate, bytes: Int64, urgent: Bool) {
            (self.gate, self.bytes, self.urgent) = (gate, bytes, urgent)
        }

        /// Waits for the transfer's turn under the bandwidth limit, for the bytes it moves.
        func pace(_ moved: Int64? = nil) async throws(SyncError) {
            let bytes = moved ?? self.bytes
            paced.withLock { $0 += bytes }
            try await gate.pace(bytes, urgent: urgent)
        }

        /// `moved`: the bytes it carried, if it completed (the admitted bytes by default).
        func finish(completed: Bool, moved: Int64? = nil) {
            gate.release(bytes, moved: completed ? moved ?? bytes : nil, refund: completed ? 0 : paced.withLock { $0 })
        }
    }

    /// Waits until a transfer of about `bytes` bytes may start (before its bytes are read
    /// into memory: that is what `bytesInFlight` bounds).
    /// An `urgent` transfer (a reader waits for it) goes before every queued one that is not.
    func admit(bytes: Int64, urgent: Bool = false) async throws(SyncError) -> Ticket {
        try await acquire(bytes, urgent: urgent)
        return Ticket(gate: self, bytes: bytes, urgent: urgent)
    }

    /// Runs one transfer of about `bytes` bytes once admitted and paced. `moving`: the bytes
    /// it carries when that is more than it holds in memory at once (a streamed read).
    func run<T: Sendable>(bytes: Int64, moving: Int64? = nil, urgent: Bool = false, _ body: () async throws(SyncError) -> T) async throws(SyncError) -> T {
        let ticket = try await admit(bytes: bytes, urgent: urgent)
        do throws(SyncError) {
            try await ticket.pace(moving)
            let result = try await body()
            ticket.finish(completed: true, moved: moving)
            return result
        } catch {
            ticket.finish(completed: false)
            throw error
        }
    }

    public var snapshot: Snapshot {
        let now = ContinuousClock.now
        return state.withLock { state in
            Snapshot(
                limit: state.limit, queued: state.waiters.count, queuedBytes: state.waiters.reduce(0) { $0 + $1.bytes },
                running: state.running, runningBytes: state.runningBytes, done: state.done, doneBytes: state.doneBytes,
                rate: state.recent.rate(at: now), throttled: state.throttled, pace: limits.bytesPerSecond
            )
        }
    }

    // MARK: Admission

    private func acquire(_ bytes: Int64, urgent: Bool) async throws(SyncError) {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        // A cancellation that came after the admission leaves the id behind: dropped here.
        defer { state.withLock { _ = $0.cancelled.remove(id) } }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let admitted: Bool? = state.withLock { state in
                        if state.cancelled.remove(id) != nil { return nil }
                        let ahead = urgent ? state.waiters.firstIndex { !$0.urgent } ?? state.waiters.count : state.waiters.count
                        if ahead == 0 && admits(bytes, state) {
                            state.running += 1
                            state.runningBytes += bytes
                            return true
                        }
                        state.waiters.insert(Waiter(id: id, bytes: bytes, urgent: urgent, continuation: continuation), at: ahead)
                        return false
                    }
                    switch admitted {
                    case nil: continuation.resume(throwing: CancellationError())
                    case true?: continuation.resume()
                    case false?: break
                    }
                }
            } onCancel: {
                let (cancelled, admitted) = state.withLock { state -> (Waiter?, [Waiter]) in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                        state.cancelled.insert(id)
                        return (nil, [])
                    }
                    // The next ones may fit now that this one is gone.
                    return (state.waiters.remove(at: index), admitWaiting(&state))
                }
                cancelled?.continuation.resume(throwing: CancellationError())
                for waiter in admitted { waiter.continuation.resume() }
            }
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled while waiting for a transfer slot", cause: error)
        }
    }

    private func admits(_ bytes: Int64, _ state: State) -> Bool {
        state.running < state.limit && (state.running == 0 || state.runningBytes + bytes <= limits.bytesInFlight)
    }

    /// Takes the waiters that fit now from the head of the queue; the caller resumes them
    /// once the lock is released.
    private func admitWaiting(_ state: inout State) -> [Waiter] {
        var admitted: [Waiter] = []
        while let first = state.waiters.first, admits(first.bytes, state) {
            state.waiters.removeFirst()
            state.running += 1
            state.runningBytes += first.bytes
            admitted.append(first)
        }
        return admitted
    }

    /// Waits for the transfer's turn on a paced link (`LinkPacer`).
    fileprivate func pace(_ bytes: Int64, urgent: Bool) async throws(SyncError) {
        let now = ContinuousClock.now
        guard let start = state.withLock({ $0.pacer?.reserve(bytes, urgent: urgent, now: now) }), start > now else { return }
        do { try await Task.sleep(until: start, clock: .continuous) } catch {
            throw SyncError(code: .cancelled, message: "cancelled while waiting for the bandwidth limit", cause: error)
        }
    }

    /// Ends a transfer admitted for `bytes`; `moved` is what it carried if it completed,
    /// `refund` the paced bytes it gives back if not.
    fileprivate func release(_ bytes: Int64, moved: Int64?, refund: Int64) {
        let now = ContinuousClock.now
        let throttles = congestion?.count ?? 0
        let admitted = state.withLock { state -> [Waiter] in
            state.running -= 1
            state.runningBytes -= bytes
            if let moved {
                state.done += 1
                state.doneBytes += moved
                state.recent.add(moved, at: now)
            } else if refund > 0 {
                state.pacer?.refund(refund, now: now)
            }
            adapt(&state, throttles: throttles, completed: moved != nil, now: now)
            return admitWaiting(&state)
        }
        for waiter in admitted { waiter.continuation.resume() }
    }

    /// Halves the limit on new throttling replies (once a second at most), and raises it
    /// by one after as many completed transfers in a row without any.
    private func adapt(_ state: inout State, throttles: UInt64, completed: Bool, now: ContinuousClock.Instant) {
        if throttles > state.seenThrottles {
            state.seenThrottles = throttles
            state.throttled += 1
            state.successes = 0
            if state.lastDecrease.map({ now - $0 >= .seconds(1) }) ?? true {
                state.limit = max(1, state.limit / 2)
                state.lastDecrease = now
            }
            return
        }
        guard completed else { return }
        state.successes += 1
        if state.successes >= state.limit && state.limit < limits.transfers {
            state.limit += 1
            state.successes = 0
        }
    }
}
