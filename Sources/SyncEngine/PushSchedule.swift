/// When local changes are pushed. A burst of changes (an untar, a build, an editor's
/// save) is pushed once it has been quiet for the debounce, not piecemeal while the
/// programs making it still want the CPU and the disk: a poll or a remote change that
/// comes during a burst pulls but does not push. A burst that never ends is still
/// pushed, all of it, each time its oldest waiting change has waited `maxDelay`.
struct PushSchedule: Sendable {
    /// The oldest and newest local change not yet taken by a push; nil when none is waiting.
    private(set) var firstChange: ContinuousClock.Instant?
    private(set) var lastChange: ContinuousClock.Instant?
    /// Every change noted so far, pushed or not: an order of the pending changes planned
    /// before the last one may be stale (`SyncEngine.PushOrder`).
    private(set) var changes: UInt64 = 0

    mutating func noteChange(at now: ContinuousClock.Instant) {
        if firstChange == nil { firstChange = now }
        lastChange = now
        changes &+= 1
    }

    /// Waiting changes should be pushed now: quiet for `debounce`, or waiting for `maxDelay`.
    func isDue(at now: ContinuousClock.Instant, debounce: Duration, maxDelay: Duration) -> Bool {
        guard let lastChange else { return false }
        return now - lastChange >= debounce || isOverdue(at: now, maxDelay: maxDelay)
    }

    /// The oldest waiting change has waited `maxDelay`: push all that is pending, even
    /// while the burst goes on, so its backlog never grows past `maxDelay`'s worth.
    func isOverdue(at now: ContinuousClock.Instant, maxDelay: Duration) -> Bool {
        guard let firstChange else { return false }
        return now - firstChange >= maxDelay
    }

    /// Changes are still coming and not overdue: a cycle that starts now should not push.
    func isBursting(at now: ContinuousClock.Instant, debounce: Duration, maxDelay: Duration) -> Bool {
        firstChange != nil && !isDue(at: now, debounce: debounce, maxDelay: maxDelay)
    }

    /// A push starts: it takes every change made so far; later ones wait for the next.
    mutating func pushStarted() {
        firstChange = nil
        lastChange = nil
    }
}
