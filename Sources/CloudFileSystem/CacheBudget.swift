import ContentCache
import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import Logging
import Metrics
import MetadataStore
import Synchronization

/// Keeps local content within a budget: when the cache grows past it, items that are
/// unpinned, uploaded, and not open are evicted, least recently used first, until the
/// cache is back under 90% of the budget. Pinned, open and unuploaded items never are.
/// The budget also shrinks so that the cache disk keeps some free space. Runs on its own
/// thread (eviction takes leases, a blocking wait).
public final class CacheBudget: Sendable {
    public let limit: Int64
    private let core: FileSystemCore
    private let logger: Logger
    private let stopped = Mutex(false)
    private let recentEvictions: (@Sendable ([String]) -> Void)?
    /// Files evicted since the mount (the metrics).
    public let evictions = Counter()

    /// Files opened this recently are worth telling about when they are evicted.
    static let recentUse: Int64 = 3600 * 1_000_000_000

    /// Space always left free on the cache disk: 5% of it, at least 1 GiB (less on small disks).
    static func reserve(diskSize: Int64) -> Int64 { min(max(diskSize / 20, 1 << 30), diskSize / 10) }

    /// The default budget: a quarter of the cache disk.
    public static func defaultLimit(cacheDirectory: String) -> Int64 {
        var info = statvfs()
        guard statvfs(cacheDirectory, &info) == 0 else { return 1 << 30 }
        return Int64(info.f_blocks) * Int64(info.f_frsize) / 4
    }

    /// `recentEvictions` gets the paths of evicted files opened within the last hour: a
    /// budget too small for what is in use (the desktop notification).
    public init(core: FileSystemCore, limit: Int64, logger: Logger, recentEvictions: (@Sendable ([String]) -> Void)? = nil) {
        self.recentEvictions = recentEvictions
        self.core = core
        self.limit = limit
        self.logger = logger
    }

    public func start() {
        let thread = Thread { [self] in
            var lastFree: UInt64?
            var pause: Double = 1
            var lastPrefetch = ContinuousClock.now - .seconds(60)
            while !stopped.withLock({ $0 }) {
                // Measuring the cache stats every cache file. Nothing on the cache disk changed
                // (same free blocks), so the cache did not grow: skip it. Otherwise measure, at
                // most 5% of the time, so a cache of a million files is not scanned every second.
                let free = freeBlocks()
                if free == nil || free != lastFree {
                    let took = ContinuousClock().measure { enforce() }
                    lastFree = freeBlocks()
                    pause = max(1, 20 * (took / .seconds(1)))
                }
                // Now and then, pinned items whose download failed or was cut short are fetched again.
                if ContinuousClock.now - lastPrefetch >= .seconds(60) {
                    lastPrefetch = .now
                    let downloads = core.downloads
                    Task { await downloads.prefetchPinned() }
                    // Access times noted since, in one batch: a kill loses at most a minute of them.
                    core.flushAccessTimes()
                }
                Thread.sleep(forTimeInterval: pause)
            }
        }
        thread.name = "ubiqfs-cache-budget"
        thread.start()
    }

    private func freeBlocks() -> UInt64? {
        var info = statvfs()
        guard statvfs(core.cache.directory, &info) == 0 else { return nil }
        return UInt64(info.f_bfree)
    }

    public func stop() {
        stopped.withLock { $0 = true }
    }

    /// The budget now: the configured limit, or less if the disk is running out of space.
    public func effectiveLimit(usage: Int64) -> Int64 {
        var info = statvfs()
        guard statvfs(core.cache.directory, &info) == 0 else { return limit }
        let size = Int64(info.f_blocks) * Int64(info.f_frsize)
        let available = Int64(info.f_bavail) * Int64(info.f_frsize)
        return max(0, min(limit, usage + available - Self.reserve(diskSize: size)))
    }

    /// Evicts until the cache fits; returns how many items were evicted.
    @discardableResult
    public func enforce() -> Int {
        var usage = core.cacheBytes()
        let budget = effectiveLimit(usage: usage)
        guard usage > budget else { return 0 }
        let target = budget / 10 * 9
        let handles = core.handles
        let cache = core.cache
        let candidates: [(ino: Inode, lastUse: Int64)]
        do {
            candidates = try core.metadata.read { db in
                try ItemRow.evictableFiles(db)
                    .filter { row in try row.baseSeq > 0 && !handles.isOpen(row.inode) && !ItemRow.isPinned(row.inode, db) }
                    .map { ($0.inode, handles.lastUse($0.inode) ?? cache.status($0.inode)?.mtime ?? 0) }
            }
        } catch {
            logger.error("cache budget: cannot list candidates: \(error)")
            return 0
        }
        var evicted = 0
        var recent: [Inode] = []
        let recently = Timestamp.now() - Self.recentUse
        for candidate in candidates.sorted(by: { $0.lastUse < $1.lastUse }) where usage > target {
            let size = (cache.status(candidate.ino)?.blocks ?? 0) * 512
            do {
                try core.evictFile(candidate.ino)
                usage -= size
                evicted += 1
                evictions.add()
                if handles.lastUse(candidate.ino).map({ $0 > recently }) == true { recent.append(candidate.ino) }
            } catch {
                logger.debug("cache budget: kept inode \(candidate.ino): \(error)")
            }
        }
        if evicted > 0 {
            logger.info("cache budget: evicted \(evicted) items; cache now \(usage) of \(budget) bytes")
        }
        if !recent.isEmpty, let recentEvictions { recentEvictions(recent.map { core.path(of: $0) }) }
        return evicted
    }
}
