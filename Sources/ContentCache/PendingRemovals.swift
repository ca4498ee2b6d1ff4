import Inodes
import Synchronization

/// The content of deleted items, kept until their delete is on disk in the state
/// database. Removed first, a power cut could undo the delete and keep the removal: the
/// item would come back without its bytes. Each waits for a mark of the database's
/// (`MetadataStore.durabilityMark`), taken after the delete committed.
final class PendingRemovals: Sendable {
    private struct Entry {
        var mark: UInt64
        var since: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Inode: Entry] = [:]
        /// No later than the oldest entry's `since` (a cancel leaves it): asked every
        /// few milliseconds, so not computed from thousands of entries each time.
        var oldest: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    func add(_ ino: Inode, mark: UInt64) {
        state.withLock { state in
            let now = ContinuousClock.now
            let since = state.entries[ino]?.since ?? now
            state.entries[ino] = Entry(mark: max(mark, state.entries[ino]?.mark ?? 0), since: since)
            if state.oldest == nil { state.oldest = since }
        }
    }

    /// New content of `ino` is made (or it is removed at once): the old removal must not
    /// take it. Waits for a drain that is removing it.
    func cancel(_ ino: Inode) {
        state.withLock { state in
            state.entries[ino] = nil
            if state.entries.isEmpty { state.oldest = nil }
        }
    }

    /// Removes every entry whose mark `isDurable`, each under the lock (so no new content
    /// of its inode is made meanwhile) but the lock let go between them (creates and
    /// fills wait for one unlink, not for all of an `rm -rf`); returns how many.
    func drain(isDurable: (UInt64) -> Bool, remove: (Inode) -> Void) -> Int {
        let due = state.withLock { state in state.entries.filter { isDurable($0.value.mark) }.map(\.key) }
        var removed = 0
        for ino in due {
            state.withLock { state in
                guard let entry = state.entries[ino], isDurable(entry.mark) else { return }
                remove(ino)
                state.entries[ino] = nil
                removed += 1
            }
        }
        if removed > 0 { state.withLock { $0.oldest = $0.entries.values.map(\.since).min() } }
        return removed
    }

    func contains(_ ino: Inode) -> Bool { state.withLock { $0.entries[ino] != nil } }

    /// When the oldest waiting removal was asked for (or earlier); nil if none waits.
    var oldest: ContinuousClock.Instant? { state.withLock { $0.oldest } }
}
