import CloudFileSystem
import ContainerStore
import Foundation
import Glibc
import Logging
import MetadataStore
import Metrics
import MetricsHTTP
import SyncEngine

/// A mount's metrics in the Prometheus text format (`--metrics`), every series labelled
/// with the mountpoint: what the parts count as they work (store, kernel requests,
/// commits, cache) and what the engine's status says at the scrape. A figure that cannot
/// be read now is left out (and logged), never shown as a zero an alert would misread.
struct MetricsExporter: Sendable {
    let mountpoint: String
    let sync: SyncEngine
    let core: FileSystemCore
    let metadata: MetadataStore
    let cacheDirectory: String
    let budget: CacheBudget
    let store: MeasuredStore
    let timings: FuseRequestTimings
    let health: MountHealth
    let logger: Logger

    func respond(_ path: String) async -> MetricsServer.Response {
        switch path {
        case "/metrics":
            return MetricsServer.Response(status: 200, contentType: MetricsText.contentType, body: await text())
        case "/healthz":
            if let problem = await health.problem() { return MetricsServer.Response(status: 503, body: problem + "\n") }
            return MetricsServer.Response(status: 200, body: "ok\n")
        default:
            return MetricsServer.Response(status: 404, body: "not found: /metrics and /healthz are served here\n")
        }
    }

    func text() async -> String {
        var out = MetricsText(commonLabels: [("mount", mountpoint)])
        storeMetrics(&out)
        await syncMetrics(&out)
        kernelMetrics(&out)
        cacheMetrics(&out)
        out.gauge("ubiqfs_store_up", "1 when the store answered the last health probe.", await health.storeProblem() == nil ? 1 : 0)
        out.gauge("ubiqfs_mount_up", "1 while the FUSE session serves requests.", health.isServing && timings.stuck == nil ? 1 : 0)
        return out.text
    }

    private func storeMetrics(_ out: inout MetricsText) {
        out.family("ubiqfs_store_bytes_total", .counter, "Bytes of objects put to (up) and got from (down) the store.")
        out.sample("ubiqfs_store_bytes_total", [("direction", "up")], Double(store.bytesUp.value))
        out.sample("ubiqfs_store_bytes_total", [("direction", "down")], Double(store.bytesDown.value))
        out.family("ubiqfs_store_objects_total", .counter, "Objects put to (up) and got from (down) the store.")
        out.sample("ubiqfs_store_objects_total", [("direction", "up")], Double(store.objectsUp.value))
        out.sample("ubiqfs_store_objects_total", [("direction", "down")], Double(store.objectsDown.value))
        out.histograms("ubiqfs_store_request_duration_seconds", "Store requests from call to answer, by operation.", store.durations)
        out.counters("ubiqfs_store_errors_total", "Store requests that failed, by operation and kind (a missing object is no failure).", store.errors)
    }

    private func syncMetrics(_ out: inout MetricsText) async {
        let status = await sync.status()
        let metrics = sync.metrics
        out.gauge("ubiqfs_pending_changes", "Items with local changes not yet committed.", Double(max(0, status.pendingItems)))
        out.gauge("ubiqfs_pending_uploads", "Files whose content waits to be uploaded.", Double(status.pendingFiles ?? 0))
        out.gauge("ubiqfs_pending_upload_bytes", "Bytes of the files whose content waits to be uploaded.", Double(status.pendingBytes ?? 0))
        do {
            let (oldest, items) = try await metadata.read { db in (try PendingSince.oldest(db), try ItemRow.liveCount(db)) }
            let age = oldest.map { max(0, Date().timeIntervalSince1970 - Double($0)) } ?? 0
            out.gauge("ubiqfs_oldest_pending_change_age_seconds", "How long the oldest local change has waited for a commit (0: none waits).", age)
            out.gauge("ubiqfs_items", "Items known (files, folders, links), the root included.", Double(items))
        } catch {
            logger.error("metrics: cannot read the state database: \(error)")
        }
        out.gauge("ubiqfs_held_changes", "Other devices' changes waiting for a file open here (or to merge with an edit here).", Double(status.held?.count ?? 0))
        out.family("ubiqfs_transfers_in_flight", .gauge, "Content transfers running now, by direction.")
        out.sample("ubiqfs_transfers_in_flight", [("direction", "up")], Double(status.uploads?.running ?? 0))
        out.sample("ubiqfs_transfers_in_flight", [("direction", "down")], Double(status.downloads?.running ?? 0))
        out.counter("ubiqfs_conflicts_total", "Conflict copies made here.", metrics.conflicts.value)
        out.counter("ubiqfs_merges_total", "Other devices' versions merged with an edit made here.", metrics.merges.value)
        out.counter("ubiqfs_commits_total", "Journal records committed by this device.", metrics.commits.value)
        out.counter("ubiqfs_commit_races_total", "Commits that lost their journal position to another device (rebased and tried again).", metrics.commitRaces.value)
        out.histogram("ubiqfs_commit_duration_seconds", "A commit from planning to its record in the store, uploads included.", metrics.commitDurations)
        out.gauge("ubiqfs_journal_position", "The last journal record applied here.", Double(status.lastSeq))
        do {
            let position = try await sync.journalPosition()
            out.gauge("ubiqfs_journal_behind_records", "Journal records the store holds after the last one applied here (counted up to 1000).", Double(position.behind))
        } catch {
            logger.debug("metrics: no journal lag while the store does not answer: \(error)")
        }
        // None before the first sync: a daemon that just started is not an hour behind.
        if let lastSync = status.lastSync {
            out.gauge("ubiqfs_last_sync_timestamp_seconds", "When the last sync round (pull and push) succeeded, in unix seconds.", lastSync)
        }
        out.counter("ubiqfs_collection_runs_total", "Collections this device ran.", metrics.collections.value)
        out.counter("ubiqfs_collection_deleted_objects_total", "Objects collections deleted from the store.", metrics.collectedObjects.value)
        out.counter("ubiqfs_collection_deleted_bytes_total", "Bytes collections freed in the store.", metrics.collectedBytes.value)
        out.counter("ubiqfs_compaction_records_total", "Journal records compaction replaced by tombstones.", metrics.compactedRecords.value)
    }

    private func kernelMetrics(_ out: inout MetricsText) {
        out.family("ubiqfs_fuse_request_duration_seconds", .histogram, "Kernel requests from arrival to reply, by operation.")
        for (operation, histogram) in timings.byOperation {
            out.histogramSamples("ubiqfs_fuse_request_duration_seconds", [("operation", operation)], histogram)
        }
        out.counter("ubiqfs_fuse_request_errors_total", "Kernel requests answered with an error (ENOENT, ENODATA of a missing extended attribute and the like included).", timings.errorReplies)
    }

    private func cacheMetrics(_ out: inout MetricsText) {
        let usage = core.cacheBytes()
        out.gauge("ubiqfs_cache_bytes", "Bytes of content on this device.", Double(usage))
        out.gauge("ubiqfs_cache_budget_bytes", "The cache budget now (--cache-size, lowered to keep the disk's reserve free).", Double(budget.effectiveLimit(usage: usage)))
        var disk = statvfs()
        if statvfs(cacheDirectory, &disk) == 0 {
            out.gauge("ubiqfs_cache_disk_free_bytes", "Free bytes on the disk of the cache.", Double(disk.f_bavail) * Double(disk.f_frsize))
        } else {
            logger.error("metrics: cannot measure the cache disk \(cacheDirectory): \(String(cString: strerror(errno)))")
        }
        out.counter("ubiqfs_cache_evictions_total", "Files whose content the cache budget evicted.", budget.evictions.value)
    }
}
