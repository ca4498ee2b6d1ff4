import Dispatch
import Synchronization

/// Per-item read/write leases taken by every kernel operation (on libfuse threads, which
/// may block) and every sync step (in Tasks, which must never block a thread), so that a
/// reader sees one version from start to end and remote content is never swapped in under
/// somebody's feet.
///
/// Semantics: shared leases on a key coexist; an exclusive one excludes all others. Each
/// key queues FIFO: a request is granted only if nobody waits before it, so a shared
/// request queues behind a waiting exclusive one (writers are not starved). On release,
/// the head of the queue is granted, and with it every consecutive shared waiter.
///
/// **The lock-order rule of the whole project:** an operation acquires every lease it
/// needs in ONE call, and nobody calls `acquire` (or `withLeases`) while holding a
/// `LeaseSet`. One call takes its keys in ascending key order, holding the earlier ones
/// while it waits for later ones; given the rule, a waiter only ever waits for holders of
/// its key, who wait only for larger keys, so no cycle (deadlock) can form. Breaking the
/// rule can deadlock even on one key: holding `shared(k)` and asking again for
/// `shared(k)` queues behind any exclusive waiter on k, which waits for you. So a lease
/// lives for one kernel request or one sync step, never across requests (an open file
/// handle pins its version by other means, not by holding a lease between reads).
///
/// Implementation: all state is in one `Mutex`, never held while anybody waits. An
/// uncontended acquisition and its release are one Mutex round trip each and allocate
/// only the `LeaseSet`. Blocked threads park on a private semaphore; blocked Tasks
/// suspend on a continuation; both are woken after the Mutex is released.
public final class FileCoordinator: Sendable {
    private let table = Mutex(LeaseTable())

    public init() {}

    // MARK: Blocking acquisition (libfuse threads)

    /// Takes `requests` for `owner` (a label for `ubiqfs locks`), blocking the calling
    /// thread while they are held by others. Keys are deduplicated (exclusive wins) and
    /// taken in ascending order. With a `timeout`, gives up once it has passed: whatever
    /// was acquired is released and `LeaseTimeout` thrown. Never call this from a Task.
    @available(*, noasync, message: "blocks the thread; use the async acquire(_:owner:) in Tasks")
    public func acquire(
        _ requests: [LeaseRequest], owner: String, timeout: Duration? = nil
    ) throws(LeaseTimeout) -> LeaseSet {
        try acquireBlocking(requests, owner: owner, timeout: timeout).get()
    }

    /// Runs `body` holding `requests`, releasing them however `body` ends. Blocks like
    /// `acquire(_:owner:timeout:)` without a timeout.
    @available(*, noasync, message: "blocks the thread; use the async withLeases in Tasks")
    public func withLeases<R, E: Error>(
        _ requests: [LeaseRequest], owner: String, _ body: () throws(E) -> R
    ) throws(E) -> R {
        guard case .success(let leases) = acquireBlocking(requests, owner: owner, timeout: nil) else {
            preconditionFailure("an acquisition without a timeout cannot time out")
        }
        defer { leases.release() }
        return try body()
    }

    private func acquireBlocking(
        _ requests: [LeaseRequest], owner: String, timeout: Duration?
    ) -> Result<LeaseSet, LeaseTimeout> {
        let requests = LeaseRequest.normalized(requests)
        let since = LeaseTable.wallClock()
        // Fast path: one round trip; on contention the same round trip queues us.
        let (token, blockedAt, parking) = table.withLock { table in
            let token = table.newToken()
            let index = table.grant(requests, from: 0, token: token, owner: owner, since: since)
            guard index < requests.count else { return (token, index, DispatchSemaphore?.none) }
            let semaphore = DispatchSemaphore(value: 0)
            table.enqueue(
                .init(token: token, owner: owner, access: requests[index].access, since: since,
                      wakeup: .thread(semaphore)),
                for: requests[index].key)
            return (token, index, semaphore)
        }
        guard let semaphore = parking else {
            return .success(LeaseSet(coordinator: self, requests: requests, owner: owner, token: token))
        }

        let started = ContinuousClock.now
        let deadline = timeout.map { DispatchTime.now() + Self.dispatchInterval($0) }
        var index = blockedAt
        while index < requests.count {
            // Parked on requests[index]; whoever grants it signals after unlocking.
            if let deadline, semaphore.wait(timeout: deadline) == .timedOut {
                let key = requests[index].key
                var wakeups: [LeaseWakeup] = []
                let blockers: [LeaseHolderInfo]? = table.withLock { table in
                    guard table.withdraw(token: token, key: key, wakeups: &wakeups) != nil else {
                        return nil  // granted just as we gave up
                    }
                    table.release(requests[..<index], token: token, wakeups: &wakeups)
                    return table.holders(of: key)
                }
                for wakeup in wakeups { wakeup.granted() }
                if let blockers {
                    return .failure(LeaseTimeout(
                        key: key, owner: owner, waited: ContinuousClock.now - started, blockers: blockers))
                }
                semaphore.wait()  // the granter's signal is imminent; consume it before reuse
            } else if deadline == nil {
                semaphore.wait()
            }
            let next = index + 1
            let now = LeaseTable.wallClock()
            index = table.withLock { table in
                let index = table.grant(requests, from: next, token: token, owner: owner, since: now)
                if index < requests.count {
                    table.enqueue(
                        .init(token: token, owner: owner, access: requests[index].access, since: now,
                              wakeup: .thread(semaphore)),
                        for: requests[index].key)
                }
                return index
            }
        }
        return .success(LeaseSet(coordinator: self, requests: requests, owner: owner, token: token))
    }

    private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return .nanoseconds(0) }
        guard seconds < Int64(Int.max / 1_000_000_000) - 1 else { return .never }
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }

    // MARK: Async acquisition (Tasks and actors)

    /// Takes `requests` for `owner`, suspending (never blocking a thread) while they are
    /// held by others; same ordering and dedup as the blocking variant. If the Task is
    /// cancelled while waiting, the wait is withdrawn, everything acquired so far is
    /// released and `CancellationError` thrown; an acquisition that needs no wait
    /// succeeds even in a cancelled Task.
    public func acquire(
        _ requests: [LeaseRequest], owner: String,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(CancellationError) -> LeaseSet {
        let requests = LeaseRequest.normalized(requests)
        let since = LeaseTable.wallClock()
        let (token, blockedAt) = table.withLock { table in
            let token = table.newToken()
            return (token, table.grant(requests, from: 0, token: token, owner: owner, since: since))
        }
        var index = blockedAt
        while index < requests.count {
            let current = index
            let key = requests[current].key
            let granted = await withTaskCancellationHandler {
                await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Bool, Never>) in
                    let now = LeaseTable.wallClock()
                    let immediate: Bool? = table.withLock { table in
                        // Checked under the lock, so a cancellation either sees us queued
                        // (and withdraws us) or is seen here.
                        if Task.isCancelled { return false }
                        if table.grant(requests, from: current, upTo: current + 1,
                                       token: token, owner: owner, since: now) > current {
                            return true
                        }
                        table.enqueue(
                            .init(token: token, owner: owner, access: requests[current].access, since: now,
                                  wakeup: .task(continuation)),
                            for: key)
                        return nil
                    }
                    if let immediate { continuation.resume(returning: immediate) }
                }
            } onCancel: {
                var wakeups: [LeaseWakeup] = []
                let withdrawn = table.withLock { table in
                    table.withdraw(token: token, key: key, wakeups: &wakeups)
                }
                for wakeup in wakeups { wakeup.granted() }
                withdrawn?.wakeup.cancelled()
            }
            guard granted else {
                release(requests[..<current], token: token)
                throw CancellationError()
            }
            let now = LeaseTable.wallClock()
            index = table.withLock { table in
                table.grant(requests, from: current + 1, token: token, owner: owner, since: now)
            }
        }
        return LeaseSet(coordinator: self, requests: requests, owner: owner, token: token)
    }

    /// Runs `body` holding `requests` (acquired as by the async `acquire`), on the
    /// caller's actor, releasing them however `body` ends.
    public func withLeases<R, E: Error>(
        _ requests: [LeaseRequest], owner: String,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws(E) -> R
    ) async throws -> R {
        let leases = try await acquire(requests, owner: owner, isolation: isolation)
        defer { leases.release() }
        return try await body()
    }

    /// The same for a synchronous `body`. Without this overload, a non-`await`ing closure
    /// in an async context would resolve to the blocking variant (which is `noasync`).
    public func withLeases<R, E: Error>(
        _ requests: [LeaseRequest], owner: String,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () throws(E) -> R
    ) async throws -> R {
        let leases = try await acquire(requests, owner: owner, isolation: isolation)
        defer { leases.release() }
        return try body()
    }

    // MARK: Inspection

    /// Every key with a holder or a waiter, by ascending key: holders in grant order and
    /// waiters in queue order. For `ubiqfs locks` and for tests; a consistent instant.
    public func snapshot() -> [LeaseTableEntry] {
        table.withLock { $0.snapshot() }
    }

    // MARK: Release (from LeaseSet)

    func release(_ requests: ArraySlice<LeaseRequest>, token: UInt64) {
        guard !requests.isEmpty else { return }
        var wakeups: [LeaseWakeup] = []
        table.withLock { $0.release(requests, token: token, wakeups: &wakeups) }
        for wakeup in wakeups { wakeup.granted() }
    }
}
