import ContentCache
import GRDB
import Inodes
import ItemModel
import Logging
import MetadataStore

/// Brings the database and the cache into agreement at startup, in both directions,
/// after a clean stop or a kill -9: every pending change stays pending, nothing is lost.
public enum StateReconciler {
    /// Streams the rows and keeps only what needs action: holding every local file's row
    /// and a set of every inode made a daemon with a million items start at 129 MiB.
    public static func reconcile(metadata: MetadataStore, cache: ContentCache, logger: Logger) throws {
        let cached = Self.uniqueSorted(cache.cachedInodes())
        let outcome = try metadata.write { db -> (purged: [Inode], lost: [String], stray: [Inode]) in
            // Nothing uses any inode yet: deleted rows go, or at least their content.
            let purged = try ItemRow.purgeDeletedAtStart(db)
            let (missing, stray) = try ItemRow.cacheMismatches(cached: cached, db)
            var lost: [String] = []
            for (ino, contentChanged) in missing {
                guard var item = try ItemRow.find(ino: ino, db) else { continue }
                if contentChanged {
                    // The content never reached the disk (no fsync before the crash): say so, keep the item.
                    lost.append(item.itemName.description)
                    try cache.createEmpty(ino)
                } else {
                    item.contentState = .placeholder
                    try item.update(db)
                }
            }
            return (purged, lost, stray)
        }
        for ino in outcome.purged + outcome.stray { cache.remove(ino) }
        for name in outcome.lost {
            logger.error("the unsynced content of \(name) was not on disk after a crash (never fsynced); it is empty now")
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
