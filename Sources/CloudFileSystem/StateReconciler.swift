import ContentCache
import GRDB
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
        let outcome = try metadata.write { db -> (purged: [Int64], lost: [String], stray: [Int64]) in
            // Deleted rows whose delete needs no push are unused now (no kernel, no handles).
            var purged = try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND dirty = 0")
            try db.execute(sql: "DELETE FROM item WHERE deleted = 1 AND dirty = 0")
            // Deletes still to push need no content: free it now, as an unused unlink does.
            purged += try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND content = ?", arguments: [ContentState.local.rawValue])
            try db.execute(sql: "UPDATE item SET content = ? WHERE deleted = 1", arguments: [ContentState.placeholder.rawValue])
            // Local files without a cache file, and cache files without an item: one pass
            // over the inodes in order beside the sorted cache listing.
            var missing: [(ino: Int64, contentChanged: Bool)] = []
            var stray: [Int64] = []
            var next = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT ino, kind, content, dirty FROM item ORDER BY ino")
            while let row = try rows.next() {
                let ino: Int64 = row[0]
                while next < cached.count && cached[next] < ino {
                    stray.append(cached[next])
                    next += 1
                }
                let isCached = next < cached.count && cached[next] == ino
                if isCached { next += 1 }
                if !isCached && row[1] == ItemKind.file.rawValue && row[2] == ContentState.local.rawValue {
                    missing.append((ino, DirtyFlags(rawValue: row[3]).contains(.content)))
                }
            }
            stray += cached[next...]
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
    static func uniqueSorted(_ values: [Int64]) -> [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(values.count)
        for value in values.sorted() where result.last != value { result.append(value) }
        return result
    }
}
