import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import Inodes
import ItemModel
import Logging
import MetadataStore
import Synchronization

/// Fetches the blocks of partial files into their cache files: the blocks a reader waits
/// for first, then readahead, then whole files (`materialize`: pinned items, `ubiqfs
/// download`, a file opened for writing); and the content of earlier versions
/// (`fetchVersion`). Every block comes through one `BlockFetcher`, is verified against its
/// hash and made durable before it is marked here; concurrent callers for one block share
/// one fetch (`Downloader+Blocks`).
public actor Downloader {
    /// Transfers in flight and per-item errors, for the status xattrs.
    public nonisolated let transfers: TransferTable
    /// The fill of each partial file.
    public nonisolated let partials: PartialFiles
    /// Told when a download completes (a thumbnail may be made of it).
    public nonisolated let thumbnailEvents = ThumbnailEvents()
    let calls: SyncCalls
    let fetcher: BlockFetcher
    let cache: ContentCache
    let coordinator: FileCoordinator
    let invalidations: any InvalidationSink
    let feed: ChangeFeed
    let reachability: StoreReachability
    /// Block fetches (and whole files) at once: the download gate's most.
    nonisolated var parallelTransfers: Int { fetcher.gate.limits.transfers }
    let logger: Logger

    /// Who waits for a block fetch, and for which fill.
    struct BlockKey: Hashable {
        var generation: Int64
        var index: Int
    }

    /// Readers first, then readahead, then whole-file downloads.
    enum Priority: Int, Comparable {
        case reader, readahead, background
        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    struct Job {
        var partial: PartialContent
        var index: Int
        var priority: Priority
        var order: UInt64
        /// The transfer it runs in: its own `order`, or its run's first (neighbouring blobs
        /// of one pack fetched with one ranged `GET`).
        var transfer: UInt64 = 0

        var key: BlockKey { BlockKey(generation: partial.generation, index: index) }
    }

    var queued: [BlockKey: Job] = [:]
    var running: [BlockKey: Job] = [:]
    var blockWaiters: [BlockKey: [UUID: CheckedContinuation<Void, any Error>]] = [:]
    var nextOrder: UInt64 = 0
    /// Whole-file downloads running, per item (their transfer shows in the xattrs).
    var filling: [Inode: Int] = [:]
    /// Fills whose fetched blocks are being made durable and recorded, by generation, and
    /// those that got more blocks meanwhile (`Downloader+Blocks.persistSoon`).
    var persisting: Set<Int64> = []
    var persistAgain: Set<Int64> = []

    public init(
        store: any ContainerStore, metadata: MetadataStore, cache: ContentCache, coordinator: FileCoordinator,
        transfers: TransferTable, gates: TransferGates, invalidations: any InvalidationSink, feed: ChangeFeed, reachability: StoreReachability,
        configuration: SyncConfiguration, logger: Logger
    ) {
        calls = SyncCalls(store: store, metadata: metadata, timeout: configuration.storeTimeout, reachability: reachability)
        fetcher = BlockFetcher(calls: calls, gate: gates.download)
        partials = PartialFiles(cache: cache, metadata: metadata)
        self.cache = cache
        self.coordinator = coordinator
        self.transfers = transfers
        self.invalidations = invalidations
        self.feed = feed
        self.reachability = reachability
        self.logger = logger
    }

    /// Items with blocks being fetched now (`ubiqfs status`).
    public var activeCount: Int { Set(running.values.map(\.partial.ino)).union(filling.keys).count }

    /// Prefetches started and not done (counted at once, before their task runs).
    nonisolated let prefetches = Mutex(0)

    /// Nothing is being fetched, queued, recorded or about to be prefetched.
    public var isIdle: Bool {
        queued.isEmpty && running.isEmpty && filling.isEmpty && persisting.isEmpty && prefetches.withLock { $0 == 0 }
    }

    // MARK: Whole files

    /// Fetches every block of a placeholder or partial file not here yet, and returns when
    /// the file is local. Concurrent callers share the fetches; a caller that is cancelled
    /// (Ctrl-C) stops waiting, the fetches go on for the others.
    public func materialize(_ ino: Inode) async throws {
        guard let partial = try await startFill(ino) else { return }
        filling[ino, default: 0] += 1
        if filling[ino] == 1 {
            transfers.begin(ino, .download, total: partial.size)
            transfers.progress(ino, done: partial.presentBytes)
        }
        var failure: (any Error)?
        do {
            try await fetch(partial, partial.missing(offset: 0, length: Int(clamping: partial.size)), priority: .background)
            try await persist(partial)
        } catch {
            failure = error
        }
        filling[ino, default: 1] -= 1
        if filling[ino] == 0 {
            filling[ino] = nil
            transfers.end(ino, error: failure.map { Self.reason($0) })
        }
        if let failure { throw failure }
    }

    /// The item's fill, started under a shared lease (its content cannot change meanwhile).
    func startFill(_ ino: Inode) async throws(SyncError) -> PartialContent? {
        let leases = try await coordinator.sharedLease(ino, for: "download")
        defer { leases.release() }
        let row = try await calls.read("cannot read inode \(ino)") { db in try ItemRow.find(ino: ino, db) }
        guard let row, !row.deleted else { throw SyncError(code: .notFound, message: "inode \(ino) no longer exists") }
        let partials = self.partials
        return try await OffloadedWork.run { () throws(SyncError) in try partials.fill(for: row) }
    }

    // MARK: Pinned items

    /// Downloads every file not wholly here that is pinned (itself or by a folder above
    /// it): at start, now and then (a failed download is tried again), and after moves.
    public func prefetchPinned(under root: Inode? = nil) async {
        let candidates = (try? await calls.metadata.read { db in try ItemRow.pinnedPlaceholders(under: root, db) }) ?? []
        prefetch(candidates.filter { filling[$0] == nil })
    }

    /// Downloads these items in the background, many at once (a pinned folder of small
    /// files costs a round trip per file, which must overlap), in order (pinned items,
    /// `user.ubiqfs.download`). Their blocks queue behind what readers wait for.
    public nonisolated func prefetch(_ inos: [Inode]) {
        guard !inos.isEmpty else { return }
        let width = parallelTransfers
        prefetches.withLock { $0 += 1 }
        Task {
            defer { prefetches.withLock { $0 -= 1 } }
            // Small files packed side by side: one ranged GET per run of them first.
            if inos.count > 1 { await self.fetchPackedNeighbours(inos) }
            await withTaskGroup(of: Void.self) { group in
                var pending = inos[...]
                func startNext() {
                    guard let ino = pending.popFirst() else { return }
                    group.addTask {
                        do { try await self.materialize(ino) } catch {
                            self.logger.warning("download of inode \(ino) failed: \(error)")
                        }
                    }
                }
                for _ in 0..<width { startNext() }
                while await group.next() != nil { startNext() }
            }
        }
    }

    // MARK: Earlier versions

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
                try await fetcher.fetch(block, into: temporary.fd, at: offset, of: "a version of \(name)", urgent: true)
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

    /// A failure in words, for `user.ubiqfs.error`.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? SyncError else { return "\(error)" }
        guard error.code == .corrupt else { return error.description }
        // The store's own words say what is damaged ("... is a FIFO in the store folder").
        guard let cause = error.cause as? StoreError else { return error.message }
        return error.message + ": " + cause.message
    }
}
