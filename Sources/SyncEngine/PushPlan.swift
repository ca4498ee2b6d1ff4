import GRDB
import Inodes
import ItemModel
import MetadataStore

/// The journal operations for a set of dirty rows, in an order every device can apply:
/// deletes of files and links first (so a new item may take a deleted one's name), then
/// upserts with parents before children, then upserts of links (their items are placed
/// by then), then deletes of folders, deepest first (so whatever moved out of them moved
/// first).
struct PushPlan: Sendable {
    enum Change: Sendable {
        case upsert(ItemSnapshot)
        case delete(ItemID)
    }

    struct Entry: Sendable {
        var ino: Inode
        var change: Change
        var changeGen: Int64
        var upload: ContentUpload?
        /// A file's new name (mode, xattrs) sent with its committed content: its own content
        /// stays dirty.
        var nameOnly = false

        var itemID: ItemID {
            switch change {
            case .upsert(let item): item.id
            case .delete(let id): id
            }
        }
    }

    var entries: [Entry] = []
    /// Rows whose change needs no operation (created and deleted before any commit).
    var settled: [Inode] = []
    /// The root's change generation its attributes were read at, when the record carries
    /// them (`JournalRecord.root`): changed since, it stays pending.
    var rootChangeGen: Int64?
    /// Items whose pictures made here the record carries (`MadeThumbnails`).
    var pictured: Set<ItemID> = []

    var operations: [JournalOperation] {
        entries.map { entry in
            switch entry.change {
            case .upsert(let item): .upsert(item)
            case .delete(let id): .delete(id)
            }
        }
    }

    /// Every dirty row that needs an operation, in commit order, and the rows that need
    /// none. Cheap per row (no xattrs, no snapshots, no content), so a backlog of a million
    /// changes is ordered without preparing a million operations; each record takes the
    /// next part of the order, and only its rows' content is uploaded and only they become
    /// operations (`make`). The order stays valid for the rest of a backlog while nothing
    /// but our own commits changes the items (see `SyncEngine.PushOrder`).
    static func order(rows: [ItemRow], _ db: Database) throws -> (ordered: [ItemRow], settled: [Inode]) {
        var ids: [Inode: (parent: Inode?, deleted: Bool)] = [:]
        func node(_ ino: Inode) throws -> (parent: Inode?, deleted: Bool)? {
            if ino == Inode.root { return (nil, false) }
            if let known = ids[ino] { return known }
            guard let row = try ItemRow.find(ino: ino, db) else { return nil }
            let value = (row.parent, row.deleted)
            ids[ino] = value
            return value
        }
        // Each folder's depth is found once: a chain of 50,000 folders costs 50,000 steps,
        // not 50,000 walks to the root.
        var depths: [Inode: Int] = [Inode.root: 0]
        func depth(_ ino: Inode) throws -> Int {
            var chain: [Inode] = []
            var onChain: Set<Inode> = []
            var current: Inode? = ino
            var known = 0
            while let value = current {
                if let found = depths[value] {
                    known = found
                    break
                }
                // A cycle (a damaged table) or an orphan ends the walk where it stands.
                guard onChain.insert(value).inserted else { break }
                chain.append(value)
                current = try node(value)?.parent
            }
            for (offset, member) in chain.reversed().enumerated() { depths[member] = known + offset + 1 }
            return depths[ino] ?? known
        }

        var settled: [Inode] = []
        var fileDeletes: [ItemRow] = []
        var upserts: [(Int, ItemRow)] = []
        var links: [ItemRow] = []
        var folderDeletes: [(Int, ItemRow)] = []
        for row in rows {
            if row.deleted {
                if try BaseSnapshots.find(row.itemID, db) == nil {
                    settled.append(row.inode)
                } else if row.itemKind == .directory {
                    folderDeletes.append((try depth(row.inode), row))
                } else {
                    fileDeletes.append(row)
                }
                continue
            }
            guard let parentIno = row.parent, let parent = try node(parentIno), !parent.deleted else { continue }
            if row.isLink {
                links.append(row)
            } else {
                upserts.append((try depth(row.inode), row))
            }
        }
        upserts.sort { $0.0 < $1.0 }
        folderDeletes.sort { $0.0 > $1.0 }
        return (fileDeletes + upserts.map(\.1) + links + folderDeletes.map(\.1), settled)
    }

    /// `chosen` and the dirty rows a device applying them needs in the same record, in
    /// `order`'s order. Between two records every device sees the committed tree, so an
    /// upsert brings the change of the item that holds its name there (renamed away or
    /// deleted, maybe further on in the order: else two items would have one name) and of
    /// its changed folders above it (moved, or never committed); a folder's delete brings
    /// the changes of what was in it, and a link's delete the move of its item into its
    /// place. The chains are as long as the renames that made them,
    /// so a record stays near `maxOperationsPerRecord`. A held-back file may come along:
    /// `make` then sends its new name with its committed content.
    static func withDependencies(_ chosen: [ItemRow], _ db: Database) throws -> (ordered: [ItemRow], settled: [Inode]) {
        var rows = chosen
        var included = Set(chosen.map(\.inode))
        var next = 0
        var rowOfIno: [Inode: ItemRow] = [:]
        func find(_ ino: Inode) throws -> ItemRow? {
            if let known = rowOfIno[ino] { return known }
            let row = try ItemRow.find(ino: ino, db)
            rowOfIno[ino] = row
            return row
        }
        func include(_ row: ItemRow?) {
            guard let row, !row.dirtyFlags.isEmpty, included.insert(row.inode).inserted else { return }
            rows.append(row)
        }
        while next < rows.count {
            let row = rows[next]
            next += 1
            if row.deleted {
                // A link whose item took its place (the item's own name removed here): the
                // move goes with the delete. Alone in a later record it reads as an edit
                // (`RecordApplier.isNameRemoval` looks in the record for the link's delete),
                // and brings back the item on a device that removed every name.
                if let id = row.linkedItem, let item = try ItemRow.find(id: id, db), !item.deleted,
                   item.parent == row.parent, item.itemName == row.itemName {
                    include(item)
                }
                guard row.itemKind == .directory else { continue }
                for child in try BaseSnapshots.children(of: row.itemID, db) { include(try ItemRow.find(id: child, db)) }
                continue
            }
            guard let parentIno = row.parent, let parent = try find(parentIno) else { continue }
            if parentIno != Inode.root { include(parent) }
            // A link needs its item committed: a new one goes in the same record.
            if let item = row.linkedItem { include(try ItemRow.find(id: item, db)) }
            guard row.dirtyFlags.contains(.metadata) else { continue }
            for holder in try BaseSnapshots.holders(of: row.itemName, in: parent.itemID, db) where holder != row.itemID {
                include(try ItemRow.find(id: holder, db))
            }
        }
        if rows.count == chosen.count { return (chosen, []) }
        return try order(rows: rows, db)
    }

    /// The operations for the rows a record takes, in `order`'s order. A file whose content changed
    /// but has no upload (held back, or written again meanwhile) waits for a later record, or
    /// if it was renamed (or chmod-ed) goes now with its committed content.
    static func make(
        chosen: [ItemRow], settled: [Inode], uploads: [Inode: ContentUpload], pictures: [ItemID: Pictures] = [:], _ db: Database
    ) throws -> PushPlan {
        var plan = PushPlan()
        plan.settled = settled
        var parentIDs: [Inode: ItemID] = [Inode.root: .root]
        var placed: Set<ItemID> = []
        for row in chosen {
            let ino = row.inode
            if row.deleted {
                plan.entries.append(Entry(ino: ino, change: .delete(row.itemID), changeGen: row.changeGen, upload: nil))
                continue
            }
            guard let parentIno = row.parent else { continue }
            if parentIDs[parentIno] == nil {
                guard let parent = try ItemRow.find(ino: parentIno, db), !parent.deleted else { continue }
                parentIDs[parentIno] = parent.itemID
            }
            guard let parentID = parentIDs[parentIno] else { continue }
            if row.isLink {
                // Its item not committed and not in this record (being written): it waits too.
                guard let item = row.linkedItem, try placed.contains(item) || BaseSnapshots.find(item, db) != nil else { continue }
                let link = ItemSnapshot.link(id: row.itemID, parent: parentID, name: row.itemName, of: item)
                plan.entries.append(Entry(ino: ino, change: .upsert(link), changeGen: row.changeGen, upload: nil))
                continue
            }
            let xattrs = try StoredXattrs.all(of: ino, db)
            var item = ItemSnapshot(
                id: row.itemID, parent: parentID, name: row.itemName, kind: row.itemKind, mode: UInt32(row.mode),
                mtime: row.mtime, size: row.size, blocks: nil, target: row.symlinkTarget,
                xattrs: xattrs.isEmpty ? nil : xattrs,
                rdev: row.itemKind.isDevice ? UInt64(bitPattern: row.rdev ?? 0) : nil
            )
            let upload = uploads[ino]
            switch row.itemKind {
            case .file:
                if let upload {
                    item.blocks = upload.blocks
                    item.size = upload.size
                    item.mtime = upload.mtime
                } else if row.dirtyFlags.contains(.content) {
                    // Being written (or written again since its upload): its new name, mode and
                    // xattrs go with the content last committed; the content follows later.
                    guard row.dirtyFlags.contains(.metadata), let base = try BaseSnapshots.find(row.itemID, db) else { continue }
                    item.blocks = base.blocks
                    item.size = base.size
                    item.mtime = base.mtime
                    item.thumbnails = base.thumbnails
                    plan.entries.append(Entry(ino: ino, change: .upsert(item), changeGen: row.changeGen, upload: nil, nameOnly: true))
                    continue
                } else {
                    item.blocks = row.blockList
                }
                // Pictures of the committed content stay with it through renames and chmods.
                if let base = try BaseSnapshots.find(row.itemID, db), let thumbnails = base.thumbnails,
                   (item.blocks ?? []).sameContent(as: base.blocks ?? []) {
                    item.thumbnails = thumbnails
                }
                if let made = pictures[row.itemID], (item.blocks ?? []).sameContent(as: made.content) {
                    item.thumbnails = made.thumbnails
                    plan.pictured.insert(row.itemID)
                }
            case .directory:
                item.size = 0
            case .symlink:
                item.size = Int64(row.symlinkTarget?.bytes.count ?? 0)
            case .fifo, .socket, .characterDevice, .blockDevice, .link:
                item.size = 0
            }
            plan.entries.append(Entry(ino: ino, change: .upsert(item), changeGen: row.changeGen, upload: upload))
            placed.insert(row.itemID)
        }
        return plan
    }

    /// The pictures made here, by item: the content they show, and the item's thumbnails with them.
    typealias Pictures = (content: [BlockReference], thumbnails: [Thumbnail])

    /// Upserts for the items whose pictures go out and that the record does not take
    /// already: each its committed snapshot with the pictures, first in the record (the
    /// item and its folder are committed). Sent as `nameOnly`: whatever of the item is
    /// still pending here stays so.
    mutating func addPictures(_ pictures: [ItemID: Pictures], _ db: Database) throws {
        let taken = Set(entries.map(\.itemID))
        var added: [Entry] = []
        for (id, made) in pictures.sorted(by: { $0.key < $1.key }) where !taken.contains(id) {
            guard let row = try ItemRow.find(id: id, db), !row.deleted, var item = try BaseSnapshots.find(id, db),
                  (item.blocks ?? []).sameContent(as: made.content) else { continue }
            item.thumbnails = made.thumbnails
            added.append(Entry(ino: row.inode, change: .upsert(item), changeGen: row.changeGen, upload: nil, nameOnly: true))
            pictured.insert(id)
        }
        entries.insert(contentsOf: added, at: 0)
    }
}
