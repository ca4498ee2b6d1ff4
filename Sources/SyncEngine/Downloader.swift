import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import Inodes
import ItemModel
import Logging
import MetadataStore

/// Downloads of placeholders, beside the sync loop: whole-file downloads (`materialize`),
/// reads served while a download runs (`beginStreaming`, `waitForRange`), the prefetch of
/// pinned items, and the content of earlier versions (`fetchVersion`). Every block comes
/// through one `BlockFetcher`. Concurrent callers for one item share one download (a
/// `Stream` with a generation number); a finished download is installed under a short
/// exclusive lease, and never over content that changed meanwhile.
public actor Downloader {
    /// Transfers in flight and per-item errors, for the status xattrs and streaming reads.
    public nonisolated let transfers: TransferTable
    let calls: SyncCalls
    let fetcher: BlockFetcher
    let cache: ContentCache
    let coordinator: FileCoordinator
    let invalidations: any InvalidationSink
    let feed: ChangeFeed
    let reachability: StoreReachability
    let parallelTransfers: Int
    let logger: Logger

    /// A download in progress, readable as its blocks arrive (streaming reads).
    struct Stream {
        var generation: UInt64
        var path: String
        /// The block a reader waits for: fetched next.
        var wanted: Int?
        var readers: [UUID: (offset: Int64, length: Int, continuation: CheckedContinuation<Void, any Error>)] = [:]
    }

    /// Callers of `materialize`, per item, until its download ends.
    var waiters: [Inode: [UUID: CheckedContinuation<Void, any Error>]] = [:]
    var streams: [Inode: Stream] = [:]
    var nextGeneration: UInt64 = 1

    public init(
        store: any ContainerStore, metadata: MetadataStore, cache: ContentCache, coordinator: FileCoordinator,
        transfers: TransferTable, invalidations: any InvalidationSink, feed: ChangeFeed, reachability: StoreReachability,
        configuration: SyncConfiguration, logger: Logger
    ) {
        calls = SyncCalls(store: store, metadata: metadata, timeout: configuration.storeTimeout, reachability: reachability)
        fetcher = BlockFetcher(calls: calls)
        self.cache = cache
        self.coordinator = coordinator
        self.transfers = transfers
        self.invalidations = invalidations
        self.feed = feed
        self.reachability = reachability
        parallelTransfers = max(1, configuration.parallelTransfers)
        self.logger = logger
    }

    /// Downloads running now (`ubiqfs status`).
    public var activeCount: Int { streams.count }

    // MARK: Waiting for content

    /// Downloads a placeholder's content. Concurrent callers share one download; a caller
    /// that is cancelled (Ctrl-C) stops waiting, the download goes on for the others.
    public func materialize(_ ino: Inode) async throws {
        let waiter = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                waiters[ino, default: [:]][waiter] = continuation
                Task { await self.startDownload(ino) }
            }
        } onCancel: {
            Task { await self.cancelWaiter(ino, waiter) }
        }
    }

    /// Starts (or joins) the download of a placeholder for a reader that reads while it
    /// runs: the file to open and the download's generation; nil if the item is local.
    public func beginStreaming(_ ino: Inode) async throws -> (path: String, generation: UInt64)? {
        guard let stream = try await ensureStream(ino) else { return nil }
        return (stream.path, stream.generation)
    }

    /// Returns when the byte range of that download is on disk (blocks a reader waits for
    /// are fetched first), or throws if the download failed.
    public func waitForRange(_ ino: Inode, generation: UInt64, offset: Int64, length: Int) async throws {
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

    private func cancelReader(_ ino: Inode, _ reader: UUID) {
        streams[ino]?.readers.removeValue(forKey: reader)?.continuation.resume(throwing: CancellationError())
    }

    private func cancelWaiter(_ ino: Inode, _ waiter: UUID) {
        waiters[ino]?.removeValue(forKey: waiter)?.resume(throwing: CancellationError())
    }

    /// Readers whose whole range is on disk now go on.
    func wakeReaders(_ ino: Inode, _ generation: UInt64) {
        guard var stream = streams[ino] else { return }
        for (id, reader) in stream.readers where transfers.rangeStatus(generation, offset: reader.offset, length: reader.length) == .ready {
            stream.readers.removeValue(forKey: id)
            reader.continuation.resume()
        }
        streams[ino] = stream
    }

    func finishWaiters(_ ino: Inode, _ result: Result<Void, any Error>) {
        let waiting = waiters.removeValue(forKey: ino) ?? [:]
        for continuation in waiting.values { continuation.resume(with: result) }
    }

    static func error(_ failure: TransferTable.Failure) -> SyncError {
        SyncError(code: failure.unreachable ? .unreachable : failure.noSpace ? .diskFull : .corrupt, message: failure.reason)
    }

    // MARK: Pinned items

    /// Downloads every placeholder that is pinned (itself or by a folder above it): at
    /// start, now and then (a failed download is tried again), and after moves.
    public func prefetchPinned(under root: Inode? = nil) async {
        let candidates = (try? await calls.metadata.read { db in try ItemRow.pinnedPlaceholders(under: root, db) }) ?? []
        prefetch(candidates.filter { streams[$0] == nil })
    }

    /// Downloads these items in the background, one after another (pinned items).
    public nonisolated func prefetch(_ inos: [Inode]) {
        guard !inos.isEmpty else { return }
        Task {
            for ino in inos {
                do { try await self.materialize(ino) } catch {
                    self.logger.warning("prefetch of inode \(ino) failed: \(error)")
                }
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
                try await fetcher.fetch(block, into: temporary.fd, at: offset, of: "a version of \(name)")
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
}
