import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import GRDB
import ItemModel
import Logging
import MetadataStore
import Synchronization

/// The background half of ubiqfs: pulls other devices' journal records and applies them
/// under write leases, pushes local changes as new records, and downloads placeholders.
/// One actor, and one loop task that runs every pull and push, so sync steps never race
/// each other; downloads run beside it and install their result under a lease.
public actor SyncEngine {
    public nonisolated let store: any ContainerStore
    public nonisolated let device: DeviceIdentity
    public nonisolated let info: ContainerInfo
    /// Transfers in flight and per-item errors, for the status xattrs.
    public nonisolated let transfers = TransferTable()
    /// Change events for the watch API, from this engine and from the filesystem.
    public nonisolated let feed = ChangeFeed()
    let metadata: MetadataStore
    let cache: ContentCache
    let coordinator: FileCoordinator
    let activity: any LocalActivity
    let invalidations: any InvalidationSink
    let configuration: SyncConfiguration
    let logger: Logger

    /// Set from libfuse threads, read by the loop.
    private struct Signals {
        var pushes = PushSchedule()
        /// The store said a commit may have arrived (a watch callback).
        var pullWanted = false
    }

    private nonisolated let signals = Mutex(Signals())
    private var lastSeq: UInt64
    private var paused = false
    private var online = true
    private var lastError: String?
    private var lastSync: Date?
    private var conflicts: [String] = []
    private var errors: [String] = []
    private var loop: Task<Void, Never>?
    private var watch: (any StoreWatch)?
    /// Failed cycles in a row: the next poll backs off exponentially (with jitter).
    private var failures = 0
    private var lastPrune: ContinuousClock.Instant?
    private var syncRequested = false
    private var syncWaiters: [CheckedContinuation<Result<Void, SyncError>, Never>] = []
    private var downloads: [Int64: [UUID: CheckedContinuation<Void, any Error>]] = [:]
    private var streams: [Int64: Stream] = [:]
    private var nextGeneration: UInt64 = 1
    /// A remote change waits for this file, open for writing here, to be closed.
    private var waitingFor: String?
    /// Our last commit, while nobody knows whether it landed.
    private var uncertain: UncertainCommit?

    /// The rest of a backlog's commit order, as the cycle's first push planned it. Planning
    /// reads every dirty row; a backlog of a million would cost that per 2,000-item record.
    /// Reused by the next pushes of the same cycle while the items changed only by our own
    /// commits: no local change (`PushSchedule.changes`) and no other device's record (`seq`).
    private struct PushOrder {
        var inodes: ArraySlice<Int64>
        var localChanges: UInt64
        var seq: UInt64
    }
    private var pushOrder: PushOrder?
    /// Folders a record brought back after this device deleted them (another device changed
    /// something in them) that must be pushed (changed here, or gone from the committed
    /// tree), with their change generation then. Until they are pushed or changed here, a
    /// later record deleting them again (its device took the change away) deletes them here
    /// too, instead of keeping them as an edit. In memory: after a restart such a folder is
    /// kept. (One the committed tree still holds as it is here comes back clean, and needs
    /// none of this.)
    private var resurrected: [ItemID: Int64] = [:]
    /// Full plans made (each reads every dirty row); for tests.
    private(set) var fullPushPlans = 0

    public init(
        store: any ContainerStore, info: ContainerInfo, device: DeviceIdentity, metadata: MetadataStore,
        cache: ContentCache, coordinator: FileCoordinator, activity: any LocalActivity,
        invalidations: any InvalidationSink, configuration: SyncConfiguration = SyncConfiguration(), logger: Logger
    ) throws(SyncError) {
        self.store = store
        self.info = info
        self.device = device
        self.metadata = metadata
        self.cache = cache
        self.coordinator = coordinator
        self.activity = activity
        self.invalidations = invalidations
        self.configuration = configuration
        self.logger = logger
        do {
            lastSeq = UInt64(try metadata.setting(SettingKey.lastSeq) ?? "0") ?? 0
            uncertain = try metadata.setting(SettingKey.uncertainCommit).flatMap { try? JSONDecoder().decode(UncertainCommit.self, from: Data($0.utf8)) }
        } catch {
            throw SyncError(code: .metadata, message: "cannot read the journal position", cause: error)
        }
    }

    // MARK: Control

    public func start() {
        guard loop == nil else { return }
        watch = store.watch(prefix: ContainerLayout.journalPrefix) { [weak self] in self?.remoteChange() }
        loop = Task { await self.run() }
    }

    /// Stops the loop after one last push (bounded by `shutdownPushTimeout`); whatever is
    /// still pending stays recorded in the database for the next mount.
    public func shutdown() async {
        watch?.stop()
        watch = nil
        loop?.cancel()
        _ = await loop?.value
        loop = nil
        if !paused {
            let timeout = configuration.shutdownPushTimeout
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask { _ = await self.cycle(); return true }
                group.addTask { try? await Task.sleep(for: timeout); return false }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !finished { logger.notice("the last push took longer than \(timeout); what is pending is pushed after the next mount") }
        }
        for waiter in syncWaiters { waiter.resume(returning: .failure(SyncError(code: .cancelled, message: "unmounting"))) }
        syncWaiters = []
    }

    /// A local change happened: push it after the debounce. Safe from any thread.
    public nonisolated func localChange() {
        let now = ContinuousClock.now
        signals.withLock { $0.pushes.noteChange(at: now) }
    }

    /// The store may hold a new commit: pull at the next tick. Safe from any thread.
    public nonisolated func remoteChange() {
        signals.withLock { $0.pullWanted = true }
    }

    /// Push and pull now; returns when nothing pushable is pending, or throws why not.
    public func syncNow() async throws(SyncError) {
        if paused { throw SyncError(code: .paused, message: "sync is paused; run `ubiqfs resume` first") }
        let result = await withCheckedContinuation { continuation in
            syncWaiters.append(continuation)
            syncRequested = true
        }
        try result.get()
    }

    public func pause() {
        paused = true
        logger.info("sync paused")
    }

    public func resume() {
        paused = false
        syncRequested = true
        logger.info("sync resumed")
    }

    public func status() async -> SyncStatus {
        let pending = (try? await metadata.read { db in try ItemRow.filter(ItemRow.Columns.dirty != 0).fetchCount(db) }) ?? -1
        return SyncStatus(
            state: paused ? "paused" : (online ? "online" : "offline"),
            store: store.displayName, device: device.name, lastSeq: lastSeq, pendingItems: pending,
            downloading: streams.count, lastSync: lastSync?.timeIntervalSince1970, lastError: lastError,
            conflicts: conflicts, errors: errors
        )
    }

    // MARK: The loop

    private func run() async {
        var nextPoll = ContinuousClock.now
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (debounce, maxDelay) = (configuration.debounce, configuration.maxPushDelay)
            let (pushDue, overdue, bursting, pullDue) = signals.withLock {
                ($0.pushes.isDue(at: now, debounce: debounce, maxDelay: maxDelay), $0.pushes.isOverdue(at: now, maxDelay: maxDelay),
                 $0.pushes.isBursting(at: now, debounce: debounce, maxDelay: maxDelay), $0.pullWanted)
            }
            // A watch wake-up is not allowed to defeat the backoff of a failing store.
            if !paused && (syncRequested || pushDue || (pullDue && failures == 0) || now >= nextPoll) {
                // A poll or a remote change during a burst of local changes only pulls.
                let mode: CycleMode = syncRequested || overdue ? .drain : (bursting ? .pullOnly : (pushDue ? .push : .poll))
                let waiters = syncRequested ? syncWaiters : []
                if syncRequested { syncWaiters = [] }
                syncRequested = false
                let result = await cycle(mode)
                nextPoll = .now + nextPollDelay(after: result)
                for waiter in waiters { waiter.resume(returning: result) }
            } else if paused && !syncWaiters.isEmpty {
                let waiters = syncWaiters
                syncWaiters = []
                for waiter in waiters { waiter.resume(returning: .failure(SyncError(code: .paused, message: "sync is paused"))) }
            }
            try? await Task.sleep(for: .milliseconds(25))
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
    private enum CycleMode {
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
    private func cycle(_ mode: CycleMode = .drain) async -> Result<Void, SyncError> {
        pushOrder = nil
        signals.withLock {
            if mode != .pullOnly { $0.pushes.pushStarted() }
            $0.pullWanted = false
        }
        let (debounce, maxDelay) = (configuration.debounce, configuration.maxPushDelay)
        do throws(SyncError) {
            // At most 50 rounds, or 50 lost races, should other devices keep committing;
            // but a planned backlog (`pushOrder`) is pushed to its end: 100,000 changes
            // are 50 records.
            var (rounds, races) = (0, 0)
            cycleRounds: while races < 50 && (rounds < 50 || !(pushOrder?.inodes.isEmpty ?? true)) {
                rounds += 1
                guard try await pull() else {
                    // Nothing can be committed before the journal is applied up to its end.
                    throw SyncError(code: .waiting, message: "a change from another device waits until \(waitingFor ?? "a file") is closed here")
                }
                if mode == .pullOnly { break cycleRounds }
                // The changes that made a push due go in the first round; after that, and in
                // a poll's every round, changes wait if a new burst has started meanwhile.
                let mayYield = mode == .poll || (mode == .push && rounds > 1)
                if mayYield && signals.withLock({ $0.pushes.isBursting(at: .now, debounce: debounce, maxDelay: maxDelay) }) { break cycleRounds }
                switch try await push() {
                case .idle: break cycleRounds
                case .raced: races += 1
                case .committed: break
                }
            }
            online = true
            lastError = nil
            lastSync = Date()
            await pruneVersions()
            return .success(())
        } catch {
            // Unmounting cancelled the loop mid-cycle: what is pending stays for the last push.
            if Task.isCancelled { return .failure(error) }
            online = error.code != .unreachable
            lastError = error.description
            remember(error.description, in: &errors)
            logger.error("sync failed: \(error)")
            // Retried at the next poll (later when offline), or when a writer closes.
            return .failure(error)
        }
    }

    private func remember(_ text: String, in list: inout [String]) {
        list.append(text)
        if list.count > 50 { list.removeFirst(list.count - 50) }
    }

    // MARK: Pull

    /// Applies every new record; false if one must wait for a local writer.
    @discardableResult
    func pull() async throws(SyncError) -> Bool {
        if lastSeq == 0 { try await loadCheckpoint() }
        // Sequence numbers have no gaps (each is taken with put-if-absent), so reading the
        // next key until there is none needs no listing: one request per poll when idle.
        while true {
            let seq = lastSeq + 1
            let key = ContainerLayout.journalKey(seq)
            let bytes: [UInt8]
            do {
                bytes = try await StoreDeadline.run(configuration.storeTimeout) { [store] () throws(StoreError) in try await store.get(key) }
            } catch where error.code == .notFound {
                return true
            } catch {
                throw Self.wrap(error, "cannot read \(key)")
            }
            var record = JournalRecord(device: "", deviceName: "", commit: "", time: 0, ops: [])
            do {
                let decoded = try RecordCodec.decode(JournalRecord.self, from: bytes)
                try RecordValidator.validate(decoded)
                record = decoded
            } catch let error where error.code == .unsupportedFormat {
                throw SyncError(code: .container, message: "journal record \(seq): \(error.message)")
            } catch {
                // An unreadable record is skipped (and said), so it cannot stop the container.
                logger.error("journal record \(seq) is malformed and was skipped: \(error)")
                remember("journal record \(seq) skipped: \(error.message)", in: &errors)
            }
            guard try await apply(record, seq: seq) else { return false }
            try await settleUncertain(record, seq: seq)
        }
    }

    /// The pull reached the seq of a commit whose outcome was unknown: if the record is
    /// ours, finish that commit now; if another device's, ours did not land (its rows are
    /// still dirty and go in a later commit).
    private func settleUncertain(_ record: JournalRecord, seq: UInt64) async throws(SyncError) {
        guard let pending = uncertain, seq >= pending.seq else { return }
        uncertain = nil
        if seq == pending.seq && record.commit == pending.commit {
            logger.notice("journal \(seq) is this device's commit whose reply was lost; settled, not committed again")
            let plan = try await metadataRead("cannot read items for journal \(seq)") { db in
                pending.settlingPlan(for: record) { id in try? ItemRow.find(id: id, db)?.inode }
            }
            try await committed(plan, seq: seq, time: pending.time)
        } else {
            _ = try await metadataCall("cannot clear the uncertain commit") { db in
                try db.execute(sql: "DELETE FROM setting WHERE key = ?", arguments: [SettingKey.uncertainCommit])
            }
        }
    }

    /// Applies one record under exclusive leases on every item it touches and their
    /// folders. Returns false (and applies nothing) if it must wait for a local writer.
    func apply(_ record: JournalRecord, seq: UInt64) async throws(SyncError) -> Bool {
        let inos: [Int64] = try await metadataRead("cannot read items for journal \(seq)") { db in
            var inos: Set<Int64> = []
            for operation in record.ops {
                if case .upsert(let item) = operation {
                    if item.parent == .root {
                        inos.insert(ItemRow.rootIno)
                    } else if let parent = try ItemRow.find(id: item.parent, db) {
                        inos.insert(parent.inode)
                    }
                }
                guard let row = try ItemRow.find(id: operation.itemID, db) else { continue }
                inos.insert(row.inode)
                if let parent = row.parent { inos.insert(parent) }
            }
            return inos.sorted()
        }
        let leases: LeaseSet
        do {
            leases = try await coordinator.acquire(inos.map { LeaseRequest(UInt64($0), .exclusive) }, owner: "sync: apply journal \(seq)")
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled while waiting to apply journal \(seq)", cause: error)
        }
        let device = self.device
        let activity = self.activity
        let watched = feed.isWatched
        let resurrected = self.resurrected
        let outcome: ApplyOutcome
        do {
            outcome = try await metadata.write { db in
                var applier = RecordApplier(
                    db: db, device: device, activity: activity, now: Timestamp.now(), watched: watched, resurrected: resurrected
                )
                try applier.apply(record, seq: seq)
                return applier.outcome
            }
        } catch {
            leases.release()
            if let wait = error.cause as? RecordApplier.MustWait {
                waitingFor = wait.name
                logger.info("journal \(seq) waits until \(wait.name) is closed")
                return false
            }
            throw SyncError(code: .metadata, message: "cannot apply journal \(seq)", cause: error)
        }
        waitingFor = nil
        self.resurrected = outcome.resurrected
        for ino in outcome.droppedContent {
            cache.remove(ino)
            activity.contentDiscarded(ino)
        }
        leases.release()
        lastSeq = seq
        invalidations.invalidate(outcome.invalidations)
        feed.emit(outcome.events)
        for conflict in outcome.conflicts {
            logger.warning("conflict: \(conflict)")
            remember(conflict, in: &conflicts)
        }
        for refusal in outcome.refused {
            logger.error("refused from the store: \(refusal)")
            remember(refusal, in: &errors)
        }
        await purgeDeleted()
        if !outcome.placeholders.isEmpty {
            let candidates = outcome.placeholders
            let pinned = (try? await metadata.read { db -> [Int64] in
                // Most containers pin nothing: then no item needs its ancestors walked.
                guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM item WHERE pinned = 1)") == true else { return [] }
                return try candidates.filter { try ItemRow.isPinned($0, db) }
            }) ?? []
            prefetch(pinned)
        }
        return true
    }

    private func loadCheckpoint() async throws(SyncError) {
        let keys = try await storeCall("cannot list checkpoints") { [store] () throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.checkpointPrefix)
        }
        guard let key = keys.last, ContainerLayout.sequence(ofKey: key, prefix: ContainerLayout.checkpointPrefix) != nil else { return }
        let bytes = try await storeCall("cannot read \(key)") { [store] () throws(StoreError) in try await store.get(key) }
        // Decoding and ordering 100k items takes a while: off the cooperative pool.
        let loaded = await OffloadedWork.run { () -> (seq: UInt64, items: [ItemSnapshot])? in
            guard let checkpoint = try? RecordCodec.decode(Checkpoint.self, from: bytes), checkpoint.format == Checkpoint.currentFormat,
                  ContainerLayout.checkpointKey(checkpoint.seq) == key, checkpoint.seq < UInt64(Int64.max)
            else { return nil }
            // Parents before children, so every upsert finds its folder.
            let children = Dictionary(grouping: checkpoint.items, by: \.parent)
            var ordered: [ItemSnapshot] = []
            var queue: [ItemID] = [.root]
            var seen: Set<ItemID> = [.root]
            while let next = queue.popLast() {
                for child in children[next] ?? [] where seen.insert(child.id).inserted {
                    ordered.append(child)
                    queue.append(child.id)
                }
            }
            return (checkpoint.seq, ordered)
        }
        guard let (seq, ordered) = loaded else {
            logger.error("checkpoint \(key) is unreadable; replaying the journal instead")
            return
        }
        let record = JournalRecord(device: "checkpoint", deviceName: "checkpoint", commit: key, time: 0, ops: ordered.map { .upsert($0) })
        logger.info("loading checkpoint \(seq) with \(ordered.count) items")
        _ = try await apply(record, seq: seq)
    }

    /// Drops rows of deleted items that nothing references any more, and their content.
    private func purgeDeleted() async {
        guard let candidates = try? await metadata.read({ db in
            try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND dirty = 0")
        }) else { return }
        let unused = candidates.filter { !activity.isReferenced($0) }
        guard !unused.isEmpty else { return }
        _ = try? await metadata.write { db in
            for ino in unused {
                try db.execute(sql: "DELETE FROM item WHERE ino = ? AND deleted = 1 AND dirty = 0", arguments: [ino])
            }
        }
        for ino in unused { cache.remove(ino) }
    }

    // MARK: Push

    enum PushResult { case idle, committed, raced }

    func push() async throws(SyncError) -> PushResult {
        // Order first, then upload only what this record takes: uploading every pending
        // file before each record made a large import quadratic (each record re-read and
        // re-hashed the whole backlog).
        let (chosen, settled) = try await choosePush()
        guard !chosen.isEmpty || !settled.isEmpty else { return .idle }
        var uploads: [Int64: ContentUpload] = [:]
        for row in chosen where row.itemKind == .file && row.dirtyFlags.contains(.content) && !row.deleted && !isHeldBack(row) {
            if let upload = try await upload(row) { uploads[row.inode] = upload }
        }
        let uploaded = uploads
        let plan = try await metadataRead("cannot plan the push") { db in
            try PushPlan.make(chosen: chosen, settled: settled, uploads: uploaded, db)
        }
        if !plan.settled.isEmpty {
            let settled = plan.settled
            _ = try await metadataCall("cannot settle local changes") { db in
                for ino in settled {
                    try db.execute(sql: "UPDATE item SET dirty = 0 WHERE ino = ? AND deleted = 1", arguments: [ino])
                }
            }
            await purgeDeleted()
        }
        guard !plan.entries.isEmpty else { return .idle }
        let seq = lastSeq + 1
        let record = JournalRecord(
            device: device.id, deviceName: device.name, commit: ItemID.random().rawValue, time: Timestamp.now(),
            ops: plan.operations
        )
        let bytes: [UInt8]
        do { bytes = try RecordCodec.encode(record) } catch {
            throw SyncError(code: .store, message: "cannot encode journal \(seq)", cause: error)
        }
        let key = ContainerLayout.journalKey(seq)
        // Until the store answers, nobody knows whether this lands: remember it durably.
        let pending = UncertainCommit(seq: seq, record: record, plan: plan)
        let pendingJSON = String(decoding: try Self.encodeUncertain(pending), as: UTF8.self)
        _ = try await metadataCall("cannot record commit \(seq) as pending") { db in
            try MetadataStore.setSetting(SettingKey.uncertainCommit, pendingJSON, db)
        }
        uncertain = pending
        let won = try await storeCall("cannot commit \(key)") { [store] () throws(StoreError) in try await store.putIfAbsent(key, bytes) }
        // "Already there" may be a retry of our own write that landed: the pull decides.
        guard won else {
            logger.debug("journal \(seq) was taken by another device; rebasing")
            return .raced
        }
        try await committed(plan, seq: seq, time: record.time)
        // Our own record: the rest of the order still holds.
        if pushOrder?.seq == seq - 1 { pushOrder?.seq = seq }
        logger.info("committed journal \(seq) with \(plan.entries.count) changes")
        if seq % configuration.checkpointInterval == 0 {
            await writeCheckpoint(seq)
        }
        return .committed
    }

    /// The rows the next record takes and the rows that need no operation: the next part
    /// of the order (`nextInOrder`), with what a device applying them needs in the same
    /// record (`PushPlan.withDependencies`).
    private func choosePush() async throws(SyncError) -> (chosen: [ItemRow], settled: [Int64]) {
        let (chosen, settled) = try await nextInOrder()
        guard !chosen.isEmpty else { return ([], settled) }
        let record = try await metadataRead("cannot plan the push") { db in try PushPlan.withDependencies(chosen, db) }
        return (record.ordered, settled + record.settled)
    }

    /// At most `maxOperationsPerRecord` rows, and the rows that need no operation: the next
    /// part of this cycle's order if it still holds, else a new order of every dirty row.
    /// Files `isHeldBack` are left out (a half-written file is never published).
    private func nextInOrder() async throws(SyncError) -> (chosen: [ItemRow], settled: [Int64]) {
        let limit = configuration.maxOperationsPerRecord
        let localChanges = signals.withLock { $0.pushes.changes }
        if let order = pushOrder, order.localChanges == localChanges, order.seq == lastSeq, !order.inodes.isEmpty {
            let (chosen, rest) = try await metadataRead("cannot read pending changes") { db in
                var chosen: [ItemRow] = []
                var rest = order.inodes
                while chosen.count < limit, let ino = rest.popFirst() {
                    // Gone or clean since: a commit of ours took it (or settled it).
                    guard let row = try ItemRow.find(ino: ino, db), !row.dirtyFlags.isEmpty, !self.isHeldBack(row) else { continue }
                    chosen.append(row)
                }
                return (chosen, rest)
            }
            pushOrder?.inodes = rest
            if !chosen.isEmpty { return (chosen, []) }
        }
        pushOrder = nil
        fullPushPlans += 1
        let rows = try await metadataRead("cannot read pending changes") { db in try ItemRow.dirtyRows(db) }
        let candidates = rows.filter { !isHeldBack($0) }
        guard !candidates.isEmpty else { return ([], []) }
        let (ordered, settled) = try await metadataRead("cannot plan the push") { db in
            try PushPlan.order(rows: candidates, db)
        }
        if ordered.count > limit {
            pushOrder = PushOrder(inodes: ordered.dropFirst(limit).map(\.inode)[...], localChanges: localChanges, seq: lastSeq)
        }
        return (Array(ordered.prefix(limit)), settled)
    }

    /// A file open for writing and written since its last fsync: not pushed yet.
    private nonisolated func isHeldBack(_ row: ItemRow) -> Bool {
        row.itemKind == .file && row.dirtyFlags.contains(.content) && !row.deleted && activity.isBeingWritten(row.inode)
    }

    private static func encodeUncertain(_ pending: UncertainCommit) throws(SyncError) -> Data {
        do { return try JSONEncoder().encode(pending) } catch {
            throw SyncError(code: .metadata, message: "cannot encode a pending commit", cause: error)
        }
    }

    /// Our record is in the journal: its items' committed base moves to it, and rows
    /// that did not change since they were read become clean.
    private func committed(_ plan: PushPlan, seq: UInt64, time: Int64) async throws(SyncError) {
        let activity = self.activity
        let deviceName = device.name
        _ = try await metadataCall("cannot record commit \(seq)") { db in
            for entry in plan.entries {
                guard var row = try ItemRow.find(ino: entry.ino, db) else { continue }
                let committedID: ItemID = switch entry.change {
                case .upsert(let item): item.id
                case .delete(let id): id
                }
                // A safe save may have given the row another item's id meanwhile: leave it dirty.
                guard row.itemID == committedID else { continue }
                let contentClean = entry.upload.map { activity.commitContent(entry.ino, generation: $0.writeGeneration) } ?? !entry.nameOnly
                let unchanged = row.changeGen == entry.changeGen && contentClean
                switch entry.change {
                case .delete(let id):
                    try BaseSnapshots.remove(id, db)
                    if row.deleted { row.dirtyFlags = [] }
                case .upsert(let item) where entry.nameOnly:
                    // The content (and so the mtime and size) stays ours, to be pushed.
                    try BaseSnapshots.set(item, seq: seq, db)
                    row.baseSeq = Int64(seq)
                case .upsert(let item):
                    try BaseSnapshots.set(item, seq: seq, db)
                    try FileVersions.record(item, seq: seq, device: deviceName, time: time, db)
                    row.baseSeq = Int64(seq)
                    if item.kind == .file {
                        row.blockList = item.blocks ?? []
                        if entry.upload != nil { row.size = item.size }
                    }
                    if entry.upload != nil { row.mtime = item.mtime }
                    // Not the ctime: an upload changes nothing a program can see in stat, and
                    // tar and rsync fail ("file changed as we read it") on a ctime that moves.
                    if unchanged {
                        row.dirtyFlags = []
                    } else if entry.upload != nil && contentClean {
                        // Only metadata changed since the read: the content is committed.
                        row.dirtyFlags.remove(.content)
                    }
                }
                try row.update(db)
            }
            try MetadataStore.setSetting(SettingKey.lastSeq, String(seq), db)
            try db.execute(sql: "DELETE FROM setting WHERE key = ?", arguments: [SettingKey.uncertainCommit])
        }
        lastSeq = seq
        uncertain = nil
        for entry in plan.entries { resurrected[entry.itemID] = nil }
        // The items' state (pending -> local) changed.
        invalidations.invalidate(plan.entries.map { .inode($0.ino, data: false) })
        if feed.isWatched {
            let uploaded = plan.entries.filter { $0.upload != nil }.map(\.ino)
            let paths = (try? await metadata.read { db in try uploaded.map { try ItemRow.path(of: $0, db) } }) ?? []
            feed.emit(paths.map { ChangeEvent(.uploaded, path: $0, origin: .local) })
        }
        await purgeDeleted()
    }

    /// Reads a file's local content block by block (each read under a shared lease, so a
    /// single write is never split), stores the blocks, and returns the manifest; nil if
    /// a write came in meanwhile (the next push reads it again).
    private func upload(_ row: ItemRow) async throws(SyncError) -> ContentUpload? {
        let ino = row.inode
        let generation = activity.writeGeneration(ino)
        let fd: Int32
        do { fd = try cache.open(ino, writable: false) } catch {
            throw SyncError(code: .cache, message: "cannot read local content of \(row.itemName)", cause: error)
        }
        defer { close(fd) }
        var blocks: [BlockReference?] = []
        var offset: Int64 = 0
        var uploaded: Int64 = 0
        transfers.begin(ino, .upload, total: cache.status(fd: fd)?.size ?? 0)
        var failure: String? = "upload interrupted"
        defer { transfers.end(ino, error: failure) }
        let limit = max(1, configuration.parallelTransfers)
        let timeout = configuration.storeTimeout
        let name = row.itemName.description
        do {
            // Blocks are read in order, each under a shared lease (a write is never split),
            // and hashed and stored by up to `limit` tasks at once: a slow store's latency
            // overlaps instead of adding up.
            try await withThrowingTaskGroup(of: (Int, BlockReference).self) { group in
                var inFlight = 0
                while true {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "upload cancelled"))
                    let leases: LeaseSet
                    do {
                        leases = try await coordinator.acquire([LeaseRequest(UInt64(ino), .shared)], owner: "sync: upload")
                    } catch {
                        throw SyncError(code: .cancelled, message: "cancelled while uploading", cause: error)
                    }
                    let readAt = offset
                    let wanted = info.writtenBlockLength(index: blocks.count)
                    let bytes: [UInt8]
                    do {
                        bytes = try await OffloadedWork.run { () throws(SystemError) in try Syscall.readFully(fd: fd, count: wanted, at: readAt) }
                    } catch {
                        leases.release()
                        throw SyncError(code: .cache, message: "cannot read local content of \(name)", cause: error)
                    }
                    leases.release()
                    if bytes.isEmpty { break }
                    if inFlight == limit, let (index, block) = try await group.next() {
                        blocks[index] = block
                        uploaded += block.length
                        transfers.progress(ino, done: uploaded)
                        inFlight -= 1
                    }
                    let index = blocks.count
                    blocks.append(nil)
                    group.addTask { [store] in
                        let hash = ContentHasher.sha256Hex(bytes)
                        let key = ContainerLayout.blockKey(hash)
                        do {
                            try await StoreDeadline.run(timeout) { () throws(StoreError) in
                                if try await !store.exists(key) { try await store.put(key, bytes) }
                            }
                        } catch {
                            throw Self.wrap(error, "cannot upload \(name)")
                        }
                        return (index, BlockReference(hash: hash, length: Int64(bytes.count)))
                    }
                    inFlight += 1
                    offset += Int64(bytes.count)
                    if bytes.count < wanted { break }
                }
                while let (index, block) = try await group.next() {
                    blocks[index] = block
                    uploaded += block.length
                    transfers.progress(ino, done: uploaded)
                }
            }
        } catch {
            throw Self.wrap(error, "cannot upload \(name)")
        }
        // What is committed as clean must survive a power loss here.
        do {
            _ = try await OffloadedWork.run { () throws(SystemError) in try Syscall.check("fsync") { fsync(fd) } }
        } catch {
            throw SyncError(code: .cache, message: "cannot fsync local content of \(row.itemName)", cause: error)
        }
        failure = nil
        guard activity.writeGeneration(ino) == generation, let status = cache.status(fd: fd) else { return nil }
        return ContentUpload(blocks: blocks.compactMap { $0 }, size: offset, mtime: status.mtime, writeGeneration: generation)
    }

    private func writeCheckpoint(_ seq: UInt64) async {
        do {
            let items = try await metadata.read { db in try BaseSnapshots.all(db) }
            let bytes = try await OffloadedWork.run { () throws in try RecordCodec.encode(Checkpoint(seq: seq, items: items)) }
            _ = try await store.putIfAbsent(ContainerLayout.checkpointKey(seq), bytes)
            logger.info("wrote checkpoint \(seq) with \(items.count) items")
        } catch {
            logger.error("cannot write checkpoint \(seq): \(error)")
        }
    }

    // MARK: Materialise

    /// A download in progress, readable as its blocks arrive (streaming reads).
    struct Stream {
        var generation: UInt64
        var path: String
        /// The block a reader waits for: fetched next.
        var wanted: Int?
        var readers: [UUID: (offset: Int64, length: Int, continuation: CheckedContinuation<Void, any Error>)] = [:]
    }

    /// Downloads a placeholder's content. Concurrent callers share one download; a caller
    /// that is cancelled (Ctrl-C) stops waiting, the download goes on for the others.
    public func materialize(_ ino: Int64) async throws {
        let waiter = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                downloads[ino, default: [:]][waiter] = continuation
                Task { await self.startDownload(ino) }
            }
        } onCancel: {
            Task { await self.cancelWaiter(ino, waiter) }
        }
    }

    /// Starts (or joins) the download of a placeholder for a reader that reads while it
    /// runs: the file to open and the download's generation; nil if the item is local.
    public func beginStreaming(_ ino: Int64) async throws -> (path: String, generation: UInt64)? {
        guard let stream = try await ensureStream(ino) else { return nil }
        return (stream.path, stream.generation)
    }

    /// Returns when the byte range of that download is on disk (blocks a reader waits for
    /// are fetched first), or throws if the download failed.
    public func waitForRange(_ ino: Int64, generation: UInt64, offset: Int64, length: Int) async throws {
        let reader = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                switch transfers.rangeStatus(generation, offset: offset, length: length) {
                case .ready:
                    continuation.resume()
                case .failed(let failure):
                    continuation.resume(throwing: Self.error(failure))
                case .missing:
                    guard var stream = streams[ino], stream.generation == generation else {
                        continuation.resume(throwing: SyncError(code: .cancelled, message: "the download ended"))
                        return
                    }
                    stream.wanted = transfers.firstMissing(generation, offset: offset, length: length)
                    stream.readers[reader] = (offset, length, continuation)
                    streams[ino] = stream
                }
            }
        } onCancel: {
            Task { await self.cancelReader(ino, reader) }
        }
    }

    private func cancelReader(_ ino: Int64, _ reader: UUID) {
        streams[ino]?.readers.removeValue(forKey: reader)?.continuation.resume(throwing: CancellationError())
    }

    private func startDownload(_ ino: Int64) async {
        do {
            _ = try await ensureStream(ino)
        } catch {
            finishDownload(ino, .failure(error))
        }
    }

    /// The running download of a placeholder, started if there is none; nil (and every
    /// waiter answered) if the item needs no download.
    private func ensureStream(_ ino: Int64) async throws(SyncError) -> Stream? {
        if let stream = streams[ino] { return stream }
        let row = try await metadataRead("cannot read inode \(ino)") { db in try ItemRow.find(ino: ino, db) }
        if let stream = streams[ino] { return stream }
        guard let row, row.itemKind == .file, row.contentState == .placeholder, !row.deleted else {
            finishDownload(ino, row == nil ? .failure(SyncError(code: .notFound, message: "inode \(ino) no longer exists")) : .success(()))
            return nil
        }
        if !online, let first = row.blockList.first {
            // Known offline: one bounded check, so opening fails with a clear error rather
            // than returning a file whose every read fails.
            do {
                _ = try await storeCall("cannot download \(row.itemName)") { [store] () throws(StoreError) in
                    try await store.exists(ContainerLayout.blockKey(first.hash))
                }
                online = true
            } catch {
                logger.warning("cannot open \(row.itemName): \(error)")
                throw error
            }
            if let stream = streams[ino] { return stream }
        }
        let temporary: TemporaryCacheFile
        do { temporary = try cache.makeTemporary() } catch {
            throw SyncError.cacheWrite("cannot make room for \(row.itemName)", error)
        }
        let generation = nextGeneration
        nextGeneration += 1
        let stream = Stream(generation: generation, path: temporary.path)
        streams[ino] = stream
        transfers.registerStream(generation, lengths: row.blockList.map(\.length))
        transfers.begin(ino, .download, total: row.size)
        Task { await self.runDownload(row, temporary, generation) }
        return stream
    }

    private func cancelWaiter(_ ino: Int64, _ waiter: UUID) {
        downloads[ino]?.removeValue(forKey: waiter)?.resume(throwing: CancellationError())
    }

    /// Downloads every placeholder that is pinned (itself or by a folder above it): at
    /// start, now and then (a failed download is tried again), and after moves.
    public func prefetchPinned(under root: Int64? = nil) async {
        let candidates = (try? await metadata.read { db -> [Int64] in
            let tops: [Int64] = if let root {
                [root]
            } else {
                try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE pinned = 1 AND deleted = 0")
            }
            var found: [Int64] = []
            for top in tops {
                guard let row = try ItemRow.find(ino: top, db), !row.deleted else { continue }
                let items = row.itemKind == .directory ? try ItemRow.descendants(of: top, db) : [row]
                for item in items where item.itemKind == .file && item.contentState == .placeholder {
                    if try ItemRow.isPinned(item.inode, db) { found.append(item.inode) }
                }
            }
            return found
        }) ?? []
        prefetch(candidates.filter { streams[$0] == nil })
    }

    /// Downloads these items in the background, one after another (pinned items).
    public nonisolated func prefetch(_ inos: [Int64]) {
        guard !inos.isEmpty else { return }
        Task {
            for ino in inos {
                do { try await self.materialize(ino) } catch {
                    self.logger.warning("prefetch of inode \(ino) failed: \(error)")
                }
            }
        }
    }

    private func runDownload(_ row: ItemRow, _ temporary: TemporaryCacheFile, _ generation: UInt64) async {
        let ino = row.inode
        var failure: TransferTable.Failure?
        do {
            try await download(row, temporary, generation)
        } catch {
            logger.error("download of \(row.itemName) (inode \(ino)) failed: \(error)")
            failure = TransferTable.Failure(reason: error.code == .corrupt ? error.message : error.description, unreachable: error.code == .unreachable, noSpace: error.code == .diskFull)
            if error.code == .unreachable { online = false }
            cache.discard(temporary)
        }
        transfers.end(ino, error: failure?.reason)
        transfers.finishStream(generation, failure: failure)
        let readers = streams.removeValue(forKey: ino)?.readers ?? [:]
        for reader in readers.values {
            if let failure { reader.continuation.resume(throwing: Self.error(failure)) } else { reader.continuation.resume() }
        }
        finishDownload(ino, failure.map { .failure(Self.error($0)) } ?? .success(()))
    }

    private static func error(_ failure: TransferTable.Failure) -> SyncError {
        SyncError(code: failure.unreachable ? .unreachable : failure.noSpace ? .diskFull : .corrupt, message: failure.reason)
    }

    private func finishDownload(_ ino: Int64, _ result: Result<Void, any Error>) {
        let waiters = downloads.removeValue(forKey: ino) ?? [:]
        for continuation in waiters.values { continuation.resume(with: result) }
    }

    /// Fetches every block (the ones readers wait for first), verifies each, writes it at
    /// its offset in the temporary file, then installs the file under a short exclusive lease.
    private func download(_ row: ItemRow, _ temporary: TemporaryCacheFile, _ generation: UInt64) async throws(SyncError) {
        let ino = row.inode
        let blocks = row.blockList
        var offsets: [Int64] = []
        var total: Int64 = 0
        for block in blocks {
            offsets.append(total)
            total += block.length
        }
        var started = Set<Int>()
        var cursor = 0
        var downloaded: Int64 = 0
        let limit = max(1, configuration.parallelTransfers)
        let timeout = configuration.storeTimeout
        let name = row.itemName.description
        let id = row.id
        do {
            // Up to `limit` blocks at once; a block a reader waits for is started next.
            try await withThrowingTaskGroup(of: Int.self) { group in
                var inFlight = 0
                while started.count < blocks.count || inFlight > 0 {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "download cancelled"))
                    // The first block (the one a reader waits for) alone, then `limit` at once
                    // (some block has finished): others fetched and hashed beside it would
                    // delay the first byte.
                    let window = started.count > inFlight ? limit : 1
                    if inFlight < window && started.count < blocks.count {
                        var index: Int
                        if let wanted = streams[ino]?.wanted, !started.contains(wanted) {
                            index = wanted
                            streams[ino]?.wanted = nil
                        } else {
                            index = (cursor..<blocks.count).first { !started.contains($0) } ?? (0..<blocks.count).first { !started.contains($0) }!
                        }
                        cursor = index + 1
                        started.insert(index)
                        let block = blocks[index]
                        let at = offsets[index]
                        group.addTask { [store] in
                            let bytes: [UInt8]
                            do {
                                bytes = try await StoreDeadline.run(timeout) { () throws(StoreError) in
                                    try await store.get(ContainerLayout.blockKey(block.hash))
                                }
                            } catch {
                                throw Self.wrap(error, "cannot download \(name)")
                            }
                            // Hashing a 4 MiB block takes milliseconds of CPU: off the cooperative
                            // pool, which must stay free to answer the kernel (the open's reply).
                            try await OffloadedWork.run { () throws(SyncError) in
                                guard Int64(bytes.count) == block.length, ContentHasher.sha256Hex(bytes) == block.hash else {
                                    throw SyncError(code: .corrupt, message: "block \(block.hash) of \(name) (\(id)) does not match its hash; not served")
                                }
                                do throws(SystemError) {
                                    try Syscall.writeAll(fd: temporary.fd, bytes, at: at)
                                } catch {
                                    throw SyncError.cacheWrite("cannot write \(name) to the cache", error)
                                }
                            }
                            return index
                        }
                        inFlight += 1
                        continue
                    }
                    guard let index = try await group.next() else { break }
                    inFlight -= 1
                    downloaded += blocks[index].length
                    transfers.markPresent(generation, index)
                    transfers.progress(ino, done: downloaded)
                    wakeReaders(ino, generation)
                }
            }
        } catch {
            throw Self.wrap(error, "cannot download \(name)")
        }
        let leases: LeaseSet
        do {
            leases = try await coordinator.acquire([LeaseRequest(UInt64(ino), .exclusive)], owner: "sync: install \(row.itemName)")
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled", cause: error)
        }
        defer { leases.release() }
        let current = try await metadataRead("cannot read inode \(ino)") { db in try ItemRow.find(ino: ino, db) }
        guard let current, current.contentState == .placeholder, current.blockList == blocks else {
            // The item changed meanwhile: this version is not installed (readers keep it open).
            cache.discard(temporary)
            return
        }
        do {
            let cache = self.cache
            let mtime = current.mtime
            try await OffloadedWork.run { () throws(CacheError) in try cache.install(temporary, as: ino, mtime: mtime) }
        } catch {
            throw SyncError.cacheWrite("cannot install \(row.itemName)", error)
        }
        do {
            let cache = self.cache
            try await OffloadedWork.run { () throws(CacheError) in try cache.syncFolder() }
        } catch {
            logger.error("cannot sync the cache folder: \(error)")
        }
        // Only the content state: other columns may have moved on (a commit, a chmod) meanwhile.
        _ = try await metadataCall("cannot record download of \(row.itemName)") { db in
            // Not the ctime: tar reading a placeholder would see it move under it.
            try db.execute(sql: "UPDATE item SET content = ? WHERE ino = ?", arguments: [ContentState.local.rawValue, ino])
        }
        invalidations.invalidate([.inode(ino, data: false)])
        if feed.isWatched, let path = try? await metadata.read({ db in try ItemRow.path(of: ino, db) }) {
            feed.emit(ChangeEvent(.downloaded, path: path, origin: .remote))
        }
    }

    /// An earlier version's content in a temporary cache file (verified and fsynced), for
    /// `restore`; the caller installs or discards it.
    public func fetchVersion(_ blocks: [BlockReference], of name: String) async throws(SyncError) -> TemporaryCacheFile {
        let temporary: TemporaryCacheFile
        do { temporary = try cache.makeTemporary() } catch {
            throw SyncError.cacheWrite("cannot make room for \(name)", error)
        }
        do throws(SyncError) {
            var offset: Int64 = 0
            for block in blocks {
                try Task.checkCancellation(or: SyncError(code: .cancelled, message: "restore cancelled"))
                let bytes = try await storeCall("cannot download a version of \(name)") { [store] () throws(StoreError) in
                    try await store.get(ContainerLayout.blockKey(block.hash))
                }
                guard Int64(bytes.count) == block.length, ContentHasher.sha256Hex(bytes) == block.hash else {
                    throw SyncError(code: .corrupt, message: "block \(block.hash) of a version of \(name) does not match its hash")
                }
                let at = offset
                do {
                    try await OffloadedWork.run { () throws(SystemError) in
                        try Syscall.writeAll(fd: temporary.fd, bytes, at: at)
                    }
                } catch {
                    throw SyncError.cacheWrite("cannot write a version of \(name)", error)
                }
                offset += block.length
            }
            do {
                _ = try await OffloadedWork.run { () throws(SystemError) in try Syscall.check("fsync") { fsync(temporary.fd) } }
            } catch {
                throw SyncError.cacheWrite("cannot write a version of \(name)", error)
            }
            return temporary
        } catch {
            cache.discard(temporary)
            throw error
        }
    }

    /// Forgets file versions older than the retention (each file's newest stays), at
    /// most every ten minutes.
    private func pruneVersions() async {
        let now = ContinuousClock.now
        if let last = lastPrune, now - last < .seconds(600) { return }
        lastPrune = now
        let retention = configuration.versionRetention
        let cutoff = Timestamp.now() - retention.components.seconds * 1_000_000_000
        do {
            let removed = try await metadata.write { db in try FileVersions.prune(before: cutoff, db) }
            if removed > 0 { logger.info("forgot \(removed) file versions older than the retention") }
        } catch {
            logger.error("cannot prune file versions: \(error)")
        }
    }

    /// Readers whose whole range is on disk now go on.
    private func wakeReaders(_ ino: Int64, _ generation: UInt64) {
        guard var stream = streams[ino] else { return }
        for (id, reader) in stream.readers where transfers.rangeStatus(generation, offset: reader.offset, length: reader.length) == .ready {
            stream.readers.removeValue(forKey: id)
            reader.continuation.resume()
        }
        streams[ino] = stream
    }

    // MARK: Error plumbing

    /// A store call, bounded by `storeTimeout`, its error wrapped with what was being done.
    private func storeCall<T: Sendable>(
        _ message: String, _ body: @escaping @Sendable () async throws(StoreError) -> T
    ) async throws(SyncError) -> T {
        do {
            return try await StoreDeadline.run(configuration.storeTimeout, body)
        } catch {
            throw Self.wrap(error, message)
        }
    }

    /// A write transaction (reads go through `metadataRead`: concurrent, no writer lock).
    private func metadataCall<T: Sendable>(_ message: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        do {
            return try await metadata.write(body)
        } catch {
            throw SyncError(code: .metadata, message: message, cause: error)
        }
    }

    private func metadataRead<T: Sendable>(_ message: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(SyncError) -> T {
        do {
            return try await metadata.read(body)
        } catch {
            throw SyncError(code: .metadata, message: message, cause: error)
        }
    }

    static func wrap(_ error: any Error, _ message: String) -> SyncError {
        if let error = error as? SyncError { return error }
        if let error = error as? StoreError {
            let code: SyncErrorCode = switch error.code {
            case .unreachable: .unreachable
            case .notFound: .notFound
            case .corrupt: .corrupt
            default: .store
            }
            return SyncError(code: code, message: message, cause: error)
        }
        return SyncError(code: .store, message: message, cause: error)
    }
}

extension Task where Success == Never, Failure == Never {
    static func checkCancellation(or error: SyncError) throws(SyncError) {
        if Task.isCancelled { throw error }
    }
}
