import ContentCache
import GRDB
import ItemModel
import Logging
import MetadataStore

/// Brings the database and the cache into agreement at startup, in both directions,
/// after a clean stop or a kill -9: every pending change stays pending, nothing is lost.
public enum StateReconciler {
    public static func reconcile(metadata: MetadataStore, cache: ContentCache, logger: Logger) throws {
        let cached = Set(cache.cachedInodes())
        let outcome = try metadata.write { db -> (purged: [Int64], lost: [String], stray: [Int64]) in
            // Deleted rows whose delete needs no push are unused now (no kernel, no handles).
            var purged = try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND dirty = 0")
            try db.execute(sql: "DELETE FROM item WHERE deleted = 1 AND dirty = 0")
            // Deletes still to push need no content: free it now, as an unused unlink does.
            purged += try Int64.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND content = ?", arguments: [ContentState.local.rawValue])
            try db.execute(sql: "UPDATE item SET content = ? WHERE deleted = 1", arguments: [ContentState.placeholder.rawValue])
            var lost: [String] = []
            let local = try ItemRow.filter(ItemRow.Columns.content == ContentState.local.rawValue && ItemRow.Columns.kind == ItemKind.file.rawValue).fetchAll(db)
            for var row in local where !cached.contains(row.inode) {
                if row.dirtyFlags.contains(.content) {
                    // The content never reached the disk (no fsync before the crash): say so, keep the item.
                    lost.append(row.itemName.description)
                    try cache.createEmpty(row.inode)
                } else {
                    row.contentState = .placeholder
                    try row.update(db)
                }
            }
            let known = Set(try Int64.fetchAll(db, sql: "SELECT ino FROM item"))
            return (purged, lost, cached.filter { !known.contains($0) }.sorted())
        }
        for ino in outcome.purged + outcome.stray { cache.remove(ino) }
        for name in outcome.lost {
            logger.error("the unsynced content of \(name) was not on disk after a crash (never fsynced); it is empty now")
        }
    }
}
