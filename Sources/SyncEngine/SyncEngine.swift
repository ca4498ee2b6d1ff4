import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import Inodes
import ItemModel
import Logging
import MetadataStore
import Synchronization

/// The background half of ubiqfs: pulls other devices' journal records and applies them
/// under write leases (`SyncEngine+Pull`), pushes local changes as new records
/// (`SyncEngine+Push`), on a schedule (`SyncEngine+Loop`). One actor and one loop task run
/// every pull and push, so sync steps never race each other; downloads are the
/// `Downloader`'s, beside it.
public actor SyncEngine {
    public nonisolated let store: any ContainerStore
    public nonisolated let device: DeviceIdentity
    public nonisolated let info: ContainerInfo
    /// Whether the store answered lately (false after a failed cycle or download).
    public nonisolated var storeIsOnline: Bool { reachability.isOnline }
    /// Told each conflict message as it is recorded (`status` keeps the last 50).
    public nonisolated let conflictListener = ConflictListener()
    public nonisolated let metrics = EngineMetrics()
    /// Change events for the watch API, from this engine and from the filesystem.
    public nonisolated let feed: ChangeFeed
    /// Downloads of placeholders (the engine prefetches pinned items through it).
    public nonisolated let downloads: Downloader
    /// Where the thumbnail service hears of content here and of other devices' changes.
    public nonisolated var thumbnailEvents: ThumbnailEvents { downloads.thumbnailEvents }
    let metadata: MetadataStore
    let cache: ContentCache
    let coordinator: FileCoordinator
    let activity: any LocalActivity
    let invalidations: any InvalidationSink
    let configuration: SyncConfiguration
    let reachability: StoreReachability
    let calls: SyncCalls
    let uploader: ContentUploader
    /// What collectors condemned, as this writer last listed it (format 2).
    let condemned: CondemnedObjects
    /// The format written and collected by (`info.format` until an upgrade is applied).
    nonisolated let format: ContainerFormat
    /// Whether the container's format carries hard links (3 and later): before it is
    /// upgraded, other devices could not read them.
    public nonisolated var carriesLinks: Bool { format.current >= 3 }
    /// Content transfers in flight, per direction (`ubiqfs status`).
    public nonisolated let gates: TransferGates
    let logger: Logger

    /// Set from libfuse threads, read by the loop.
    struct Signals {
        var pushes = PushSchedule()
        /// The store said a commit may have arrived (a watch callback).
        var pullWanted = false
    }

    nonisolated let signals = Mutex(Signals())
    var lastSeq: UInt64
    var paused = false
    /// A read-only mount pushes nothing (`SyncConfiguration.readOnly`, and `remount`).
    var readOnly = false
    var lastError: String?
    var lastSync: Date?
    var conflicts: [String] = []
    /// The last merges of another device's version with an edit made here.
    var merges: [String] = []
    var errors: [String] = []
    var loop: Task<Void, Never>?
    /// Removes deleted files' content once their delete is on disk (`removeDurablyDeletedContent`).
    var removals: Task<Void, Never>?
    var watch: (any StoreWatch)?
    /// Failed cycles in a row: the next poll backs off exponentially (with jitter).
    var failures = 0
    var lastPrune: ContinuousClock.Instant?
    /// After a failed sync for deletes (`removeDurablyDeletedContent`), the next try.
    var nextRemovalSync = ContinuousClock.now
    /// When the pull last listed checkpoints to see whether its next record was compacted.
    var lastGapCheck: ContinuousClock.Instant?
    /// A collection this device started by itself, and when the engine started (the first
    /// one waits a whole interval).
    var collecting: Task<Void, Never>?
    /// A collection runs on this device (by itself or `ubiqfs gc`): one at a time.
    var collectorRunning = false
    var collectionTried: Int64?
    let started = Timestamp.now()
    var syncRequested = false
    var syncWaiters: [CheckedContinuation<Result<Void, SyncError>, Never>] = []
    /// Waiting for a pull alone (`pullNow`).
    var pullWaiters: [CheckedContinuation<Result<Void, SyncError>, Never>] = []
    /// Other devices' changes held for a file open for writing here, by item (`HeldChanges`,
    /// read again whenever an apply changes them). Their items are not pushed until applied.
    var held: [ItemID: HeldChange] = [:]
    /// Our last commit, while nobody knows whether it landed.
    var uncertain: UncertainCommit?

    /// The rest of a backlog's commit order, as the cycle's first push planned it. Planning
    /// reads every dirty row; a backlog of a million would cost that per 2,000-item record.
    /// Reused by the next pushes of the same cycle while the items changed only by our own
    /// commits: no local change (`PushSchedule.changes`) and no other device's record (`seq`).
    struct PushOrder {
        var inodes: ArraySlice<Inode>
        var localChanges: UInt64
        var seq: UInt64
        /// Names the records of this order (`JournalRecord.batch`).
        var batch = ItemID.random().rawValue
    }
    var pushOrder: PushOrder?
    /// Folders a record brought back after this device deleted them (another device changed
    /// something in them) that must be pushed (changed here, or gone from the committed
    /// tree), with their change generation then. Until they are pushed or changed here, a
    /// later record deleting them again (its device took the change away) deletes them here
    /// too, instead of keeping them as an edit. In memory: after a restart such a folder is
    /// kept. (One the committed tree still holds as it is here comes back clean, and needs
    /// none of this.)
    var resurrected: [ItemID: Int64] = [:]
    /// Full plans made (each reads every dirty row); for tests.
    var fullPushPlans = 0

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
        let (feed, reachability, transfers) = (ChangeFeed(), StoreReachability(), TransferTable())
        let gates = TransferGates(configuration, congestion: store.congestion)
        self.feed = feed
        self.reachability = reachability
        self.gates = gates
        downloads = Downloader(
            store: store, metadata: metadata, cache: cache, coordinator: coordinator, transfers: transfers, gates: gates,
            invalidations: invalidations, feed: feed, reachability: reachability, configuration: configuration, logger: logger
        )
        self.invalidations = invalidations
        self.configuration = configuration
        readOnly = configuration.readOnly
        self.logger = logger
        calls = SyncCalls(store: store, metadata: metadata, timeout: configuration.storeTimeout, reachability: reachability)
        condemned = CondemnedObjects(grace: configuration.collectionGrace)
        // A record of a newer format applied before a restart counts, even if the
        // container's info was not stored again (an upgrade met just before a crash).
        let formatSeen = (try? metadata.read { db in try ContainerFormat.seen(db) }) ?? 1
        format = ContainerFormat(max(info.format, formatSeen))
        uploader = ContentUploader(
            calls: calls, format: format, cache: cache, coordinator: coordinator, activity: activity,
            transfers: transfers, gate: gates.upload, condemned: condemned, cuttings: try FileCuttings(info: info, cipher: calls.codec.cipher)
        )
        do {
            lastSeq = UInt64(try metadata.setting(SettingKey.lastSeq) ?? "0") ?? 0
            uncertain = try metadata.setting(SettingKey.uncertainCommit).flatMap { try? JSONDecoder().decode(UncertainCommit.self, from: Data($0.utf8)) }
            held = Dictionary(try metadata.read { db in try HeldChanges.all(db) }.map { ($0.itemID, $0) }, uniquingKeysWith: { _, newer in newer })
        } catch {
            throw SyncError(code: .metadata, message: "cannot read the journal position", cause: error)
        }
    }

    /// Transfers in flight and per-item errors, for the status xattrs.
    public nonisolated var transfers: TransferTable { downloads.transfers }

    // MARK: Control

    public func start() {
        guard loop == nil else { return }
        watch = store.watch(prefix: ContainerLayout.journalPrefix) { [weak self] in self?.remoteChange() }
        loop = Task { await self.run() }
        // Apart from the loop, whose cycle may take minutes (a large push, a hung store):
        // an `rm` frees its space within `removalDelay` however long a push runs.
        removals = Task {
            while !Task.isCancelled {
                await self.removeDurablyDeletedContent()
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Stops the loop after one last push, bounded by `shutdownPushTimeout`, and cut short
    /// once the store has not answered for `shutdownStallLimit` (unreachable or hanging):
    /// whatever is still pending stays recorded in the database for the next mount. Returns
    /// how many items that is.
    @discardableResult
    public func shutdown() async -> Int {
        collecting?.cancel()
        collecting = nil
        watch?.stop()
        watch = nil
        loop?.cancel()
        _ = await loop?.value
        loop = nil
        removals?.cancel()
        _ = await removals?.value
        removals = nil
        if !paused {
            let (timeout, stall) = (configuration.shutdownPushTimeout, configuration.shutdownStallLimit)
            let (start, reachability) = (DispatchTime.now(), self.reachability)
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask { _ = await self.cycle(); return true }
                group.addTask {
                    let deadline = ContinuousClock.now + timeout
                    while !Task.isCancelled && ContinuousClock.now < deadline && reachability.silence(since: start) < stall {
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !finished {
                logger.notice("the last push did not finish (at most \(timeout), or \(stall) without an answer from the store); what is pending is pushed after the next mount")
            }
        }
        for waiter in syncWaiters + pullWaiters { waiter.resume(returning: .failure(SyncError(code: .cancelled, message: "unmounting"))) }
        (syncWaiters, pullWaiters) = ([], [])
        return (try? await metadata.read { db in try ItemRow.pendingCount(db) }) ?? 0
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

    /// Pull now, pushing nothing; returns when the tree is as the store has it, or throws
    /// why not. What a mount waits for: a new device shows every item at once, and local
    /// work pending since the last run (a large file, a full store) never delays the mount.
    public func pullNow() async throws(SyncError) {
        if paused { throw SyncError(code: .paused, message: "sync is paused; run `ubiqfs resume` first") }
        let result = await withCheckedContinuation { continuation in
            pullWaiters.append(continuation)
        }
        try result.get()
    }

    /// A remount to read-only stops pushes; back to read-write, what is pending goes out.
    public func setReadOnly(_ on: Bool) {
        readOnly = on
        if !on { syncRequested = true }
        logger.info(on ? "read-only: nothing is pushed" : "read-write: pushes resume")
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
        let counts = try? await metadata.read { db -> (Int, (files: Int, bytes: Int64), Int, (Int, Int)) in
            (try ItemRow.pendingCount(db), try ItemRow.pendingContent(db), try ItemRow.ignoredCount(db),
             (try InstalledThumbnails.count(db), try MadeThumbnails.items(db).count))
        }
        let (pending, content, ignored, thumbnails) = counts ?? (-1, (files: 0, bytes: 0), -1, (-1, -1))
        var waiting: Int?
        if !held.isEmpty {
            do { waiting = try await heldBack().count } catch { logger.error("cannot count the changes held back: \(error)") }
        }
        return SyncStatus(
            state: paused ? "paused" : (reachability.isOnline ? "online" : "offline"),
            store: store.displayName, device: device.name, lastSeq: lastSeq, pendingItems: pending,
            downloading: await downloads.activeCount, lastSync: lastSync?.timeIntervalSince1970, lastError: lastError,
            held: held.values.sorted { $0.seq < $1.seq }.map {
                $0.isMerge ? "\($0.waitingFor): the change of journal \($0.seq) waits to merge with the edit here"
                    : "\($0.waitingFor): the change of journal \($0.seq) waits until it is closed here"
            },
            heldBack: waiting, readOnly: readOnly, pendingFiles: content.files, pendingBytes: content.bytes, ignoredItems: ignored,
            thumbnailsInstalled: thumbnails.0, thumbnailsToSend: thumbnails.1,
            uploads: gates.upload.snapshot, downloads: gates.download.snapshot,
            collection: await lastCollection(), transfers: await fileTransfers(), conflicts: conflicts, errors: errors,
            merges: merges.isEmpty ? nil : merges
        )
    }

    /// The largest whole-file transfers in flight, with their paths.
    private func fileTransfers() async -> [FileTransfer] {
        let running = transfers.all().sorted { $0.transfer.total > $1.transfer.total }.prefix(20)
        let paths: [String]
        do { paths = try await metadata.read { db in try running.map { try ItemRow.path(of: $0.ino, db) } } } catch {
            logger.error("cannot read the paths of transfers in flight: \(error)")
            return []
        }
        return zip(running, paths).map { entry, path in
            FileTransfer(path: path, direction: entry.transfer.direction.rawValue, done: entry.transfer.done, total: entry.transfer.total)
        }
    }

    func remember(_ text: String, in list: inout [String]) {
        list.append(text)
        if list.count > 50 { list.removeFirst(list.count - 50) }
    }
}
