import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// The shared trash (`ubiqfs trash`): what the journal deleted within the container's
/// retention, on any device. A restore is a local change like a create: the items come
/// back with their ids and last committed content (placeholders: the blocks are in the
/// store) and are pushed as new upserts; history is never rewritten.
extension FileSystemCore {
    /// Newest first; an entry all of whose items are here again (restored, or kept by an
    /// edit that won over the delete) is not listed.
    public func trash() throws(FileSystemError) -> [TrashEntry] {
        try read { db in
            try TrashEntries.all(db).filter { entry in
                try entry.items.contains { item in try ItemRow.find(id: item.id, db).map(\.deleted) ?? true }
            }
        }
    }

    /// Brings back the newest item deleted at `path` (or the one of record `seq`) at its old
    /// place: an entry's item, or one inside a deleted folder; a folder with what it held.
    /// The deleted folders above it come back too (with only what leads to it), a missing
    /// folder above the entry is made again, and a name taken meanwhile is replaced by a
    /// free one (`name (2)`). Returns where it is now.
    public func restoreFromTrash(path: String, seq: UInt64? = nil) throws(FileSystemError) -> String {
        let wanted = "/" + path.split(separator: "/").joined(separator: "/")
        let found = try trash().lazy.filter { seq == nil || $0.seq == seq }.compactMap { entry in entry.item(at: wanted).map { (entry, $0) } }.first
        guard let (entry, target) = found else {
            throw FileSystemError(.notFound, "\(wanted) is not in the trash\(seq.map { " from journal \($0)" } ?? ""); `ubiqfs trash` lists it")
        }
        var folder = Inode.root
        var missing = entry.folder[...]
        let wantedIDs = entry.restoring(target)
        let deleted = try read { db in
            while let name = missing.first, let child = try ItemRow.child(of: folder, named: name, db), child.itemKind == .directory {
                folder = child.inode
                missing.removeFirst()
            }
            return try wantedIDs.compactMap { id in try ItemRow.find(id: id, db).flatMap { $0.deleted ? $0 : nil } }
        }
        // The rows of deleted items the kernel still knows come back as they were (their
        // inode numbers); one a program still has open would be two items with one id.
        if let open = deleted.first(where: { handles.isOpen($0.inode) }) {
            throw FileSystemError(.busy, "\(open.itemName) was deleted here and is still open; close it first, then restore")
        }
        // Their old content goes first: the restored content is the snapshot's, fetched when read.
        for row in deleted {
            cache.remove(row.inode)
            downloads.partials.forget(row.inode)
        }
        let (restored, added) = try withLeases([(folder, .exclusive)], "restore") { () throws(FileSystemError) in
            try write { db in try Self.restore(target, of: entry, wanting: wantedIDs, under: folder, making: Array(missing), db) }
        }
        notifier.invalidate(added.map { .entry(parent: $0.parent, name: $0.name.bytes) } + deleted.map { .inode($0.inode, data: true) })
        sync.localChange()
        emit(.created, restored, detail: "restored from the trash")
        return self.path(of: restored)
    }

    /// In one transaction: the missing folders, then the entry's items that lead to the
    /// target and what the target held, parents first. Returns the restored target and the
    /// names added to folders that were here (the kernel may remember them as absent).
    private static func restore(
        _ target: ItemID, of entry: TrashEntry, wanting wanted: Set<ItemID>, under folder: Inode, making missing: [ByteString], _ db: Database
    ) throws -> (Inode, [(parent: Inode, name: ByteString)]) {
        _ = try liveDirectory(folder, db)
        let now = Timestamp.now()
        try ItemRow.touchFolders([folder], now: now, db)
        var parent = folder
        var added: [(parent: Inode, name: ByteString)] = []
        for name in missing {
            let free = try ItemRow.freeName(name, in: parent, db)
            if parent == folder { added.append((folder, free)) }
            var row = ItemRow(id: .random(), parent: parent, name: free, kind: .directory, mode: 0o755, uid: getuid(), gid: getgid(), size: 0, mtime: now)
            row.contentState = .local
            row.markChanged(.metadata, now: now)
            try row.insert(db)
            parent = row.inode
        }
        var placed: [ItemID: Inode] = [entry.top.parent: parent]
        var existed: Set<Inode> = missing.isEmpty ? [folder] : []
        var changedFolders: Set<Inode> = []
        // Links last, and only to an item that is here by then (restored with them, or kept).
        let ordered = entry.items.filter { $0.kind != .link } + entry.items.filter { $0.kind == .link }
        for item in ordered where wanted.contains(item.id) {
            guard let into = placed[item.parent] else { continue }
            if item.kind == .link {
                guard let of = item.of, let named = try ItemRow.find(id: of, db), !named.deleted, named.itemKind != .directory, !named.isLink else { continue }
            }
            let existing = try ItemRow.find(id: item.id, db)
            if let existing, !existing.deleted {
                // Here again (restored before, or kept): what it held comes back into it.
                if existing.itemKind == .directory {
                    placed[item.id] = existing.inode
                    existed.insert(existing.inode)
                }
                continue
            }
            // The row of a deleted item the kernel still knows is brought back as it is.
            let reusable = existing.flatMap { $0.itemKind == item.kind ? $0 : nil }
            let row = try place(item, into: into, reviving: reusable, newID: existing != nil && reusable == nil, now: now, db)
            placed[item.id] = row.inode
            if existed.contains(into) { added.append((into, row.itemName)) }
            if into != folder { changedFolders.insert(into) }
        }
        try ItemRow.touchFolders(Array(changedFolders), now: now, db)
        guard let restored = placed[target] else { throw FileSystemError(.exists, "\(entry.path) is here already") }
        return (restored, added)
    }

    /// One item as its snapshot had it, in a new row or the deleted one: to be pushed as
    /// new, its content a placeholder of the blocks the store still has.
    private static func place(_ item: ItemSnapshot, into parent: Inode, reviving old: ItemRow?, newID: Bool, now: Int64, _ db: Database) throws -> ItemRow {
        var row = old ?? ItemRow(
            id: newID ? .random() : item.id, parent: parent, name: item.name, kind: item.kind,
            mode: item.mode, uid: getuid(), gid: getgid(), size: item.size, mtime: item.mtime, ctime: now
        )
        row.parent = parent
        row.itemName = try ItemRow.freeName(item.name, in: parent, db)
        row.deleted = false
        row.mode = Int64(item.mode)
        row.size = item.size
        row.mtime = item.mtime
        row.symlinkTarget = item.target
        row.blockList = item.blocks ?? []
        row.rdev = item.kind.isDevice ? item.rdev.map { Int64(bitPattern: $0) } ?? 0 : nil
        row.linkedItem = item.kind == .link ? item.of : nil
        row.contentState = item.kind == .file ? .placeholder : .local
        row.baseSeq = 0
        row.dirtyFlags = []
        row.markChanged(.metadata, now: now)
        if old == nil { try row.insert(db) } else { try row.update(db) }
        try StoredXattrs.replace(row.inode, with: item.xattrs ?? [:], db)
        return row
    }
}
