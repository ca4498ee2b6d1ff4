import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Hard links at rebase: a link needs its item; an item deleted there goes with its every
/// name, unless an edit here keeps it (then with every name).
extension RecordApplier {
    /// A link is applied only with its item here: a file-like item (not a folder, not a
    /// link), the one the link named before. An item deleted here comes back (a new name
    /// there is a change of it), if it was ever committed.
    mutating func acceptsLink(_ item: ItemSnapshot, existing: ItemRow?, seq: UInt64) throws -> Bool {
        func refuse(_ why: String) -> Bool {
            outcome.refused.append("journal \(seq): link \(item.name) refused: \(why)")
            return false
        }
        guard let id = item.of, var named = try ItemRow.find(id: id, db) else { return refuse("its item does not exist") }
        guard named.itemKind != .directory, !named.isLink else { return refuse("it names a folder or a link") }
        if let existing, !existing.deleted, existing.linkedItem != id { return refuse("a link cannot name another item") }
        if named.deleted {
            // Deleted here, named there: it comes back as committed, as for a remote edit
            // of it (what this device wrote before deleting it went with the delete).
            guard let base = try BaseSnapshots.find(id, db) else { return refuse("its item is gone") }
            guard let parent = try folder(of: base, seq: seq) else { return false }
            try undelete(&named, as: base, parent: parent, seq: seq)
        }
        return true
    }

    /// Whether an item the other device deleted stays for its names: a clean link whose
    /// item was edited here and deleted by the same record (every name removed there), or
    /// an item with a name added or moved here. The edit wins, with every name it has.
    func keptForItsNames(_ row: ItemRow) throws -> Bool {
        if row.isLink {
            guard let item = try ItemRow.resolved(row, db), deletes.contains(item.itemID) else { return false }
            return item.dirtyFlags.edited
        }
        guard row.itemKind != .directory else { return false }
        return try ItemRow.links(to: row.itemID, db).contains { $0.dirtyFlags.edited }
    }

    /// An item deleted takes every name it has with it.
    mutating func deleteLinks(to item: ItemRow) throws {
        for var link in try ItemRow.links(to: item.itemID, db) {
            let path = try currentPath(link.inode)
            link.deleted = true
            link.dirtyFlags = []
            try link.update(db)
            // In the entry of a folder the record deletes, whichever delete came first.
            try trash.note(deleting: link.itemID, db)
            try BaseSnapshots.remove(link.itemID, db)
            note(.deleted, link.inode, path: path)
            outcome.invalidations.append(.entry(parent: link.parent ?? Inode.root, name: link.itemName.bytes))
        }
    }

    /// An item whose own name was removed here, in a folder a record deletes: if a live link
    /// outside `subtree` (and not deleted by the record) still names it, the item takes
    /// that link's place and the link's delete is pushed, as a writer's removal does.
    mutating func moveToLink(_ item: inout ItemRow, outside subtree: Set<Inode>) throws -> Bool {
        let candidates = try ItemRow.links(to: item.itemID, db)
        guard var link = candidates.first(where: { !subtree.contains($0.inode) && !deletes.contains($0.itemID) }) else { return false }
        let from = try currentPath(item.inode)
        link.deleted = true
        link.markChanged(.metadata, now: now)
        try link.update(db)
        outcome.invalidations.append(.entry(parent: link.parent ?? Inode.root, name: link.itemName.bytes))
        outcome.invalidations.append(.entry(parent: item.parent ?? Inode.root, name: item.itemName.bytes))
        (item.parent, item.itemName) = (link.parent, link.itemName)
        item.markChanged([.metadata, .nameRemoved], now: now)
        try item.update(db)
        outcome.invalidations.append(.inode(item.inode, data: false))
        note(.moved, item.inode, from: from)
        return true
    }

    /// A name added or removed changes its item's link count, which the kernel caches.
    mutating func invalidateNamedItem(of row: ItemRow) throws {
        guard row.isLink, let item = try ItemRow.resolved(row, db) else { return }
        outcome.invalidations.append(.inode(item.inode, data: false))
    }

    /// Where the links `ids` (those that are links) were, by the item each named.
    static func linkPlaces(deleting ids: Set<ItemID>, _ db: Database) throws -> [ItemID: [BaseSnapshots.Place]] {
        var places: [ItemID: [BaseSnapshots.Place]] = [:]
        for id in ids {
            guard let link = try BaseSnapshots.find(id, db), link.kind == .link, let item = link.of else { continue }
            places[item, default: []].append(BaseSnapshots.Place(parent: link.parent, name: link.name))
        }
        return places
    }

    /// Whether the upsert only moves the item to the place of one of its links that the
    /// record deletes, nothing else of it changed: its own name removed there, no edit.
    func isNameRemoval(_ item: ItemSnapshot, base: ItemSnapshot) -> Bool {
        guard let places = deletedLinkPlaces[item.id], places.contains(BaseSnapshots.Place(parent: item.parent, name: item.name)) else { return false }
        var same = item
        (same.parent, same.name) = (base.parent, base.name)
        return same == base
    }

    /// Whether the item sits where the committed tree has one of its links (the place a
    /// name removed here moved it to).
    func holdsLinkPlace(_ row: ItemRow) throws -> Bool {
        guard let parentIno = row.parent else { return false }
        let parent = parentIno == Inode.root ? ItemID.root : try ItemRow.find(ino: parentIno, db)?.itemID
        guard let parent else { return false }
        return try BaseSnapshots.holders(of: row.itemName, in: parent, db).contains { holder in
            try BaseSnapshots.find(holder, db).map { $0.kind == .link && $0.of == row.itemID } ?? false
        }
    }
}
