import ContentCache
import GRDB
import Inodes
import ItemModel
import Logging
import MetadataStore

/// Brings the database and the cache into agreement at startup, in both directions,
/// after a clean stop, a kill -9 or a power cut: every pending change stays pending,
/// nothing is lost, and what a crash took is said in the log.
public enum StateReconciler {
    /// Streams the rows and keeps only what needs action: holding every local file's row
    /// and a set of every inode made a daemon with a million items start at 129 MiB.
    /// `afterCrash`: the last stop was not clean, so each committed local file's cache file
    /// is also checked for size, and the files changed here since their upload are named.
    public static func reconcile(metadata: MetadataStore, cache: ContentCache, afterCrash: Bool = true, logger: Logger) throws {
        let cached = Self.uniqueSorted(cache.cachedInodes())
        let sizeOf: ((Inode) -> Int64?)? = afterCrash ? { cache.status($0)?.size } : nil
        let outcome = try metadata.write { db -> Outcome in
            // Nothing uses any inode yet: deleted rows go, or at least their content.
            var outcome = Outcome(purged: try ItemRow.purgeDeletedAtStart(db))
            let mismatches = try ItemRow.cacheMismatches(cached: cached, cachedSize: sizeOf, db)
            outcome.stray = mismatches.stray
            for (ino, contentChanged) in mismatches.missing {
                guard var item = try ItemRow.find(ino: ino, db) else { continue }
                if contentChanged {
                    // The content never reached the disk (no fsync before the crash): say so, keep the item.
                    outcome.lost.append(item.itemName.description)
                    try cache.createEmpty(ino)
                } else {
                    item.contentState = .placeholder
                    try item.update(db)
                }
            }
            // Never expected (a change is marked durably before it is made), but if the
            // bytes differ from what the row says was committed, they are a change: kept
            // and uploaded, never served as the committed version.
            for ino in mismatches.resized {
                guard var item = try ItemRow.find(ino: ino, db) else { continue }
                item.markChanged(.content, now: Timestamp.now())
                try item.update(db)
                outcome.resized.append(item.itemName.description)
            }
            if afterCrash {
                outcome.changed = try ItemRow.locallyChangedFileCount(db)
            }
            return outcome
        }
        // Gone once what decided it is on disk.
        let mark = metadata.durabilityMark()
        for ino in outcome.purged + outcome.stray { cache.removeOnceDurable(ino, mark: mark) }
        try metadata.syncToDisk(makingRoom: { cache.reserve.release() })
        cache.removeDurablyDeleted(metadata.isDurable)
        cache.reserve.restore()
        report(outcome, afterCrash: afterCrash, logger: logger)
    }

    private struct Outcome: Sendable {
        var purged: [Inode]
        var stray: [Inode] = []
        var lost: [String] = []
        var resized: [String] = []
        var changed = 0
    }

    private static func report(_ outcome: Outcome, afterCrash: Bool, logger: Logger) {
        if afterCrash {
            logger.notice("the last stop was not clean (a kill, a crash or a power cut): what was fsynced is here; of what was not, what had reached the disk is kept and the rest is gone, as on any filesystem; \(outcome.changed) files changed here are pending upload, \(outcome.stray.count) cache files of items never made durable were removed")
        }
        for name in outcome.lost {
            logger.error("the unsynced content of \(name) was not on disk after a crash (never fsynced); it is empty now")
        }
        for name in outcome.resized {
            logger.warning("the local content of \(name) did not match its committed version after a crash; it is kept and uploaded as a change")
        }
    }

    /// Sorted, each once ("7" and "007" in the cache folder name one inode).
    static func uniqueSorted(_ values: [Inode]) -> [Inode] {
        var result: [Inode] = []
        result.reserveCapacity(values.count)
        for value in values.sorted() where result.last != value { result.append(value) }
        return result
    }
}
