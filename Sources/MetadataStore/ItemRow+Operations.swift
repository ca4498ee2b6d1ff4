import Foundation
import GRDB
import Inodes
import ItemModel

/// Named operations on items that are not a read or write of one whole row: every other
/// module says what it wants done, and the SQL for it lives here.
extension ItemRow {
    // MARK: Deleted rows

    // The rule for deleted rows: once their delete needs no push (`dirty = 0`) and nothing
    // uses the inode (no kernel lookup, no open handle: the caller checks), they are purged.

    /// Deleted rows with nothing to push, to be purged once nothing uses their inode.
    public static func purgeCandidates(_ db: Database) throws -> [Inode] {
        try Inode.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND dirty = 0")
    }

    /// Purges a deleted row whose delete needs no push; false if it is not such a row.
    @discardableResult
    public static func purgeIfSettled(_ ino: Inode, _ db: Database) throws -> Bool {
        try db.execute(sql: "DELETE FROM item WHERE ino = ? AND deleted = 1 AND dirty = 0", arguments: [ino])
        return db.changesCount > 0
    }

    /// At startup nothing uses any inode yet: purges every settled deleted row, and makes
    /// placeholders of deleted rows still to push (their delete needs no content).
    /// Returns the inodes whose cache files can go.
    public static func purgeDeletedAtStart(_ db: Database) throws -> [Inode] {
        var freed = try purgeCandidates(db)
        try db.execute(sql: "DELETE FROM item WHERE deleted = 1 AND dirty = 0")
        freed += try Inode.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 1 AND content != ?", arguments: [ContentState.placeholder.rawValue])
        try db.execute(sql: "UPDATE item SET content = ? WHERE deleted = 1", arguments: [ContentState.placeholder.rawValue])
        return freed
    }

    /// A deleted row's content is no longer needed (its delete may still wait for a push).
    @discardableResult
    public static func dropContentIfDeleted(_ ino: Inode, _ db: Database) throws -> Bool {
        try db.execute(sql: "UPDATE item SET content = ? WHERE ino = ? AND deleted = 1", arguments: [ContentState.placeholder.rawValue, ino])
        return db.changesCount > 0
    }

    /// An item the store holds that no row stands for (a safe save renamed the new file
    /// over the original while the push committing it waited for the store): a deleted
    /// row whose delete is still to push, so that the item goes from the store too.
    public static func insertDeleteToPush(of item: ItemSnapshot, under parent: Inode?, baseSeq: Int64, _ db: Database) throws {
        var row = ItemRow(
            id: item.id, parent: parent, name: item.name, kind: item.kind, mode: item.mode, uid: 0, gid: 0,
            size: item.size, mtime: item.mtime)
        row.deleted = true
        row.baseSeq = baseSeq
        row.dirtyFlags = .metadata
        try row.insert(db)
    }

    /// Whether a folder has live items and all of them are ignored.
    public static func holdsOnlyIgnored(_ folder: Inode, _ db: Database) throws -> Bool {
        let (all, ignored) = try Row.fetchOne(
            db, sql: "SELECT count(*), count(CASE WHEN ignored != 0 THEN 1 END) FROM item WHERE parent = ? AND deleted = 0", arguments: [folder]
        ).map { (row: Row) -> (Int, Int) in (row[0], row[1]) } ?? (0, 0)
        return all > 0 && all == ignored
    }

    /// Live ignored items, each folder before what is in it (`ubiqfs reset` keeps them); none
    /// in a database whose migrations have not added the column yet.
    public static func ignoredItems(_ db: Database) throws -> [ItemRow] {
        guard try db.columns(in: "item").contains(where: { $0.name == "ignored" }) else { return [] }
        return try ItemRow.fetchAll(db, sql: """
            WITH RECURSIVE below(ino, depth) AS (
                SELECT ino, 0 FROM item WHERE ino = 1 UNION ALL
                SELECT item.ino, below.depth + 1 FROM item JOIN below ON item.parent = below.ino WHERE item.deleted = 0 AND item.ino != 1
            )
            SELECT item.* FROM item JOIN below ON item.ino = below.ino WHERE item.ignored != 0 ORDER BY below.depth, item.ino
            """)
    }

    /// Live items that stay on this device (`ubiqfs status`).
    public static func ignoredCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE ignored != 0 AND deleted = 0") ?? 0
    }

    /// An item created and deleted before any commit: its delete needs no push.
    public static func settleUncommittedDelete(_ ino: Inode, _ db: Database) throws {
        try db.execute(sql: "UPDATE item SET dirty = 0 WHERE ino = ? AND deleted = 1", arguments: [ino])
    }

    // MARK: Columns set alone

    /// Only the content state: other columns may have moved on meanwhile (a commit, a
    /// chmod), and not the ctime (tar reading a placeholder would see it move).
    public static func setContentState(_ state: ContentState, of ino: Inode, _ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE item SET content = ? WHERE ino = ?").execute(arguments: [state.rawValue, ino])
    }

    /// Eviction: the content becomes a placeholder's, and the ctime moves (a state change).
    public static func makePlaceholder(_ ino: Inode, now: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE item SET content = ?, ctime = ? WHERE ino = ?", arguments: [ContentState.placeholder.rawValue, now, ino])
    }

    /// Folders' mtime and ctime after a name in them changed, marked changed so the new
    /// mtime goes with the change that made it (the same record: a folder's upsert rides
    /// along with what changed in it), as `markChanged` marks (the root by its changeGen
    /// alone: its mtime goes in the record's `root` field). Only
    /// these columns: a whole-row update would rewrite the folder's index entries too.
    /// `pushed` false: the change is an ignored item's, which the other devices never see.
    public static func touchFolders(_ inos: [Inode], now: Int64, pushed: Bool = true, _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "UPDATE item SET mtime = ?1, ctime = ?1, dirty = dirty | (CASE WHEN ignored = 0 THEN ?2 ELSE 0 END), changeGen = changeGen + ?4 WHERE ino = ?3")
        for (index, ino) in inos.enumerated() where !inos[..<index].contains(ino) {
            // The root's changes are told by its generation alone: an ignored item's moves none.
            try statement.execute(arguments: [now, pushed && isPushed(ino) ? DirtyFlags.times.rawValue : 0, ino, pushed ? 1 : 0])
        }
    }

    // MARK: Queries

    /// Items in the state database, deleted ones still held included (`statfs`).
    public static func count(_ db: Database) throws -> Int {
        try ItemRow.fetchCount(db)
    }

    /// Items that exist (not deleted), the root included: what a mount's metrics call known.
    public static func liveCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE deleted = 0") ?? 0
    }

    /// Items with local changes not yet committed (`ubiqfs status`).
    public static func pendingCount(_ db: Database) throws -> Int {
        try (Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE dirty != 0") ?? 0) + (try RootState.pending(db) == nil ? 0 : 1)
    }

    /// Placeholders of at most `maxSize` bytes (and not empty) in a folder whose names sort
    /// after `name` (nil: all), in name order, with their names: what a program going
    /// through the folder's small files one by one will open next.
    public static func smallPlaceholders(in parent: Inode, after name: ByteString?, maxSize: Int64, limit: Int, _ db: Database) throws -> [(ino: Inode, name: ByteString)] {
        try Row.fetchAll(
            db, sql: """
                SELECT ino, name FROM item WHERE parent = ? AND name > ? AND deleted = 0 AND kind = ? AND content = ?
                AND size > 0 AND size <= ? ORDER BY name LIMIT ?
                """,
            arguments: [parent, Data(name?.bytes ?? []), ItemKind.file.rawValue, ContentState.placeholder.rawValue, maxSize, limit]
        ).map { row in (row["ino"], ByteString(Array(row["name"] as Data))) }
    }

    /// Files whose content waits to be uploaded, and their bytes (`ubiqfs status`).
    public static func pendingContent(_ db: Database) throws -> (files: Int, bytes: Int64) {
        let row = try Row.fetchOne(
            db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM item WHERE dirty & ? != 0 AND deleted = 0 AND kind = ?",
            arguments: [DirtyFlags.content.rawValue, ItemKind.file.rawValue]
        )
        return (row?[0] ?? 0, row?[1] ?? 0)
    }

    /// Whether any file has content waiting to be uploaded (a cheap probe: the dirty index).
    public static func hasPendingContent(_ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM item WHERE dirty != 0 AND dirty & ? != 0 AND kind = ?)"),
            arguments: [DirtyFlags.content.rawValue, ItemKind.file.rawValue]
        ) ?? false
    }

    /// Live siblings whose name looks like a conflict copy (the caller checks whose).
    public static func conflictCopyCandidates(in parent: Inode, _ db: Database) throws -> [ItemRow] {
        try ItemRow.filter(sql: "parent = ? AND deleted = 0 AND instr(name, ?) > 0", arguments: [parent, Data(" (conflict from ".utf8)]).fetchAll(db)
    }

    /// Local files with nothing to push: what eviction and `reset` may consider.
    public static func cleanLocalFiles(includingDeleted: Bool, _ db: Database) throws -> [ItemRow] {
        try ItemRow.fetchAll(
            db, sql: "SELECT * FROM item WHERE kind = ? AND content = ? AND dirty = 0" + (includingDeleted ? "" : " AND deleted = 0"),
            arguments: [ItemKind.file.rawValue, ContentState.local.rawValue]
        )
    }

    /// Files with content here (local or partial) and nothing to push: what the cache
    /// budget may evict.
    public static func evictableFiles(_ db: Database) throws -> [ItemRow] {
        try ItemRow.fetchAll(
            db, sql: "SELECT * FROM item WHERE kind = ? AND content != ? AND dirty = 0 AND deleted = 0 AND ignored = 0",
            arguments: [ItemKind.file.rawValue, ContentState.placeholder.rawValue]
        )
    }

    /// Of these items, the ones that are pinned (themselves or by a folder above them).
    /// Most containers pin nothing: then no item needs its ancestors walked.
    public static func pinned(among inos: [Inode], _ db: Database) throws -> [Inode] {
        guard !inos.isEmpty, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM item WHERE pinned = 1)") == true else { return [] }
        return try inos.filter { try isPinned($0, db) }
    }

    /// Files not wholly here (placeholders, partial files) that are pinned, under `root` (or
    /// anywhere): what prefetch fetches.
    public static func pinnedPlaceholders(under root: Inode?, _ db: Database) throws -> [Inode] {
        let tops: [Inode] = if let root { [root] } else { try Inode.fetchAll(db, sql: "SELECT ino FROM item WHERE pinned = 1 AND deleted = 0") }
        var found: [Inode] = []
        for top in tops {
            guard let row = try find(ino: top, db), !row.deleted else { continue }
            let items = row.itemKind == .directory ? try descendants(of: top, db) : [row]
            // A link in the folder stands for its item, wherever that item's own name is.
            for item in try items.compactMap({ try resolved($0, db) }) where item.itemKind == .file && item.contentState != .local {
                if try isPinned(item.inode, db) { found.append(item.inode) }
            }
        }
        return found
    }

    /// The item and what is inside it, parents before children, without descending into
    /// items changed here (what is inside a changed item stays with it).
    public static func subtreeStoppingAtChanges(of ino: Inode, _ db: Database) throws -> [Inode] {
        try Inode.fetchAll(db, sql: """
            WITH RECURSIVE sub(ino, dirty) AS (
                SELECT ?, 0 UNION ALL
                SELECT item.ino, item.dirty FROM item JOIN sub ON item.parent = sub.ino WHERE item.deleted = 0 AND sub.dirty & ? = 0
            ) SELECT ino FROM sub
            """, arguments: [ino, DirtyFlags.edits.rawValue])
    }

    /// At startup: local files with no cache file, cache files with no item, and (with
    /// `cachedSize`, after a crash) committed local files whose cache file has another size,
    /// found in one pass over the inodes in order beside the sorted listing of the cache.
    /// Streams the rows: holding every local file's row made a million-item start take
    /// 129 MiB.
    public static func cacheMismatches(
        cached: [Inode], cachedSize: ((Inode) -> Int64?)? = nil, _ db: Database
    ) throws -> (missing: [(ino: Inode, contentChanged: Bool)], stray: [Inode], resized: [Inode]) {
        var missing: [(ino: Inode, contentChanged: Bool)] = []
        var stray: [Inode] = []
        var resized: [Inode] = []
        var next = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT ino, kind, content, dirty, size, ignored FROM item ORDER BY ino")
        while let row = try rows.next() {
            let ino: Inode = row[0]
            while next < cached.count && cached[next] < ino {
                stray.append(cached[next])
                next += 1
            }
            let isCached = next < cached.count && cached[next] == ino
            if isCached { next += 1 }
            guard row[1] == ItemKind.file.rawValue && row[2] != ContentState.placeholder.rawValue else { continue }
            // An ignored file's content is its only copy, as a change not yet uploaded is.
            let contentChanged = DirtyFlags(rawValue: row[3]).contains(.content) || (row[5] as Int) != 0
            if !isCached {
                missing.append((ino, contentChanged))
            } else if let cachedSize, row[2] == ContentState.local.rawValue, !contentChanged, let size = cachedSize(ino), size != row[4] {
                resized.append(ino)
            }
        }
        stray += cached[next...]
        return (missing, stray, resized)
    }

    /// How many local files were changed here and not yet committed (said after a crash:
    /// what they hold that was not fsynced may be gone).
    public static func locallyChangedFileCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE dirty & ? != 0 AND kind = ? AND content = ? AND deleted = 0", arguments: [
            DirtyFlags.content.rawValue, ItemKind.file.rawValue, ContentState.local.rawValue,
        ]) ?? 0
    }
}

extension MetadataStore {
    public static func removeSetting(_ key: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM setting WHERE key = ?", arguments: [key])
    }
}

extension ItemRow {
    /// Access times noted in memory, written in one go (never older than what is stored).
    public static func storeAccessTimes(_ times: [Inode: Int64], _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "UPDATE item SET atime = max(atime, ?) WHERE ino = ?")
        for (ino, atime) in times { try statement.execute(arguments: [atime, ino]) }
    }
}
