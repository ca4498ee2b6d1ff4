import Foundation
import ItemModel
import MetadataStore

/// When the engine syncs: a loop that runs a cycle (pull, then push as the mode says) on
/// a local change after the debounce, a remote change, a request, or the next poll, and
/// backs off while the store fails.
extension SyncEngine {
    func run() async {
        var nextPoll = ContinuousClock.now
        // The first cycle only pulls, so whoever waits for the tree at start (the mount)
        // never waits behind uploads left from the last run.
        var firstCycle = true
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (debounce, maxDelay) = (configuration.debounce, configuration.maxPushDelay)
            let (pushDue, overdue, bursting, pullDue) = signals.withLock {
                ($0.pushes.isDue(at: now, debounce: debounce, maxDelay: maxDelay), $0.pushes.isOverdue(at: now, maxDelay: maxDelay),
                 $0.pushes.isBursting(at: now, debounce: debounce, maxDelay: maxDelay), $0.pullWanted)
            }
            // A watch wake-up is not allowed to defeat the backoff of a failing store.
            let pullRequested = !pullWaiters.isEmpty
            if !paused && (syncRequested || pullRequested || pushDue || (pullDue && failures == 0) || now >= nextPoll) {
                // A poll or a remote change during a burst of local changes only pulls, as
                // does a cycle someone waits on for a pull (the push follows at the next tick).
                let mode: CycleMode = syncRequested || overdue ? .drain : (bursting || pullRequested || firstCycle ? .pullOnly : (pushDue ? .push : .poll))
                let waiters = (syncRequested ? syncWaiters : []) + pullWaiters
                if syncRequested { syncWaiters = [] }
                pullWaiters = []
                syncRequested = false
                firstCycle = false
                let result = await cycle(mode)
                nextPoll = .now + nextPollDelay(after: result)
                for waiter in waiters { waiter.resume(returning: result) }
            } else if paused && !(syncWaiters.isEmpty && pullWaiters.isEmpty) {
                let waiters = syncWaiters + pullWaiters
                (syncWaiters, pullWaiters) = ([], [])
                for waiter in waiters { waiter.resume(returning: .failure(SyncError(code: .paused, message: "sync is paused"))) }
            }
            try? await Task.sleep(for: .milliseconds(25))
        }
    }

    /// Deleted files' content goes once their delete is on disk (`ContentCache`): a
    /// database sync at most `removalDelay` after the oldest waiting delete.
    func removeDurablyDeletedContent() async {
        let now = ContinuousClock.now
        guard let oldest = cache.oldestPendingRemoval, now - oldest >= configuration.removalDelay, now >= nextRemovalSync else { return }
        let (cache, metadata, logger) = (self.cache, self.metadata, self.logger)
        do {
            try await metadata.syncToDisk(makingRoom: {
                guard cache.reserve.release() else { return false }
                logger.warning("the state disk is full; spent the space reserve to make deletes durable")
                return true
            })
        } catch {
            logger.error("cannot make deletes durable; their content stays on disk until it can: \(error)")
            nextRemovalSync = now + max(configuration.removalDelay, .seconds(10))
            return
        }
        // Thousands of unlinks after an `rm -rf`: off the cooperative pool.
        await OffloadedWork.run { () -> Void in
            cache.removeDurablyDeleted(metadata.isDurable)
            cache.reserve.restore()
        }
    }

    /// The poll interval while all is well; after failures, doubling up to
    /// `maxBackoff`, with up to a quarter of random jitter so devices do not retry in step.
    private func nextPollDelay(after result: Result<Void, SyncError>) -> Duration {
        if case .success = result {
            failures = 0
            return configuration.pollInterval
        }
        failures += 1
        let base = min(configuration.pollInterval * (1 << min(failures, 10)), configuration.maxBackoff)
        return base + base * Double.random(in: 0...0.25)
    }

    /// What a cycle does after pulling.
    enum CycleMode {
        /// A burst of local changes is under way: they wait for its end.
        case pullOnly
        /// Push until nothing is left, or until a new burst of local changes starts (the
        /// changes that made the push due go in the first round).
        case push
        /// A poll or a wake-up with no push due: push what is left over, unless a burst of
        /// local changes starts meanwhile (even before the first round: its first files
        /// would go alone, beside the program still making the rest).
        case poll
        /// Push until nothing is left (`ubiqfs sync --wait`, resume, unmount, and a burst
        /// whose oldest change has waited `maxPushDelay`).
        case drain
    }

    /// One round: pull, then push (as `mode` says) until nothing is left or the store refuses.
    func cycle(_ mode: CycleMode = .drain) async -> Result<Void, SyncError> {
        pushOrder = nil
        signals.withLock {
            if mode != .pullOnly { $0.pushes.pushStarted() }
            $0.pullWanted = false
        }
        let (debounce, maxDelay) = (configuration.debounce, configuration.maxPushDelay)
        do throws(SyncError) {
            // At most 50 rounds, or 50 that could not commit (races lost should other
            // devices keep committing, rule W not met); but a planned backlog (`pushOrder`)
            // is pushed to its end: 100,000 changes are 50 records.
            var (rounds, missed, stalled) = (0, 0, false)
            cycleRounds: while missed < 50 && (rounds < 50 || !(pushOrder?.inodes.isEmpty ?? true)) {
                rounds += 1
                // A change held for a writer that closed lands first, in journal order: a later
                // record must not replace it ("applied ... when the file is closed").
                try await settleHeld()
                try await pull()
                // Changes held for a writer that has closed since, then those held for a
                // merge with an edit here (pushed in this round).
                try await settleHeld()
                try await settleMerges()
                if mode == .pullOnly || readOnly { break cycleRounds }
                // The changes that made a push due go in the first round; after that, and in
                // a poll's every round, changes wait if a new burst has started meanwhile.
                let mayYield = mode == .poll || (mode == .push && rounds > 1)
                if mayYield && signals.withLock({ $0.pushes.isBursting(at: .now, debounce: debounce, maxDelay: maxDelay) }) { break cycleRounds }
                let pushStarted = ContinuousClock.now
                switch try await push() {
                case .idle:
                    stalled = false
                    break cycleRounds
                case .committed:
                    stalled = false
                    metrics.commits.add()
                    metrics.commitDurations.observe(ContinuousClock.now - pushStarted)
                case .raced:
                    (missed, stalled) = (missed + 1, true)
                    metrics.commitRaces.add()
                case .retry: (missed, stalled) = (missed + 1, true)
                }
            }
            // A drain whose last round could not commit (races lost to other devices, or
            // rule W not met in time) stopped short: whoever waits for it hears so.
            if mode == .drain && stalled {
                throw SyncError(code: .busy, message: "the push stopped short: \(missed) of its \(rounds) rounds could not commit (another device's record took the place, or the collectors' lists could not be listed in time); what is left goes in the next sync")
            }
            reachability.set(online: true)
            lastError = nil
            lastSync = Date()
            await pruneHistory()
            await collectWhenDue()
            return .success(())
        } catch {
            // Unmounting cancelled the loop mid-cycle: what is pending stays for the last push.
            if Task.isCancelled { return .failure(error) }
            reachability.set(online: error.code != .unreachable)
            lastError = error.description
            remember(error.description, in: &errors)
            logger.error("sync failed: \(error)")
            // Retried at the next poll (later when offline), or when a writer closes.
            return .failure(error)
        }
    }
}

extension SyncEngine {
    /// Forgets file versions and trash entries older than the container's retention (each
    /// file's newest version stays), at most every ten minutes.
    func pruneHistory() async {
        let now = ContinuousClock.now
        if let last = lastPrune, now - last < .seconds(600) { return }
        lastPrune = now
        let time = Timestamp.now()
        do {
            let (versions, trash) = try await metadata.write { db in
                let retention = try ContainerSettings.current(db).retention
                let trash = try TrashEntries.prune(before: time - retention.trash * 1_000_000_000, db)
                return (try FileVersions.prune(before: time - retention.versions * 1_000_000_000, db), trash)
            }
            if versions > 0 || trash > 0 { logger.info("forgot \(versions) file versions and \(trash) trash entries older than the retention") }
        } catch {
            logger.error("cannot prune file versions and trash: \(error)")
        }
    }
}
