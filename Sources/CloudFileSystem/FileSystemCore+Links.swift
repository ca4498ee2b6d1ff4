import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Hard links: more names for an item that is not a folder (`ItemRow+Links`). Every name
/// resolves to the item, whose inode, content and attributes serve all of them; removing
/// a name keeps the item while another is left.
extension FileSystemCore {
    /// What removing one name did.
    enum NameRemoval {
        /// A link row went; the item it named stays.
        case link(Inode)
        /// The item's own name went: it lives on under one of its links, whose row went.
        case moved(linkRow: Inode)
        /// The item's last name went: the item is deleted.
        case item(Inode)
    }

    /// ext4's limit: one more name fails with EMLINK.
    static let maxNames = 65000

    public func link(_ ino: Inode, newParent: Inode, newName: [UInt8]) throws(FileSystemError) -> ItemAttributes {
        let name = try Self.checkName(newName)
        guard sync.carriesLinks else {
            throw FileSystemError(.notPermitted, "hard links need a container of format 3; a read-write mount with the store reachable upgrades it")
        }
        let now = Timestamp.now()
        let (item, created) = try withLeases([(newParent, .exclusive), (ino, .exclusive)], "link") { () throws(FileSystemError) in
            try write { db -> (ItemRow, ItemRow) in
                guard var item = try ItemRow.find(ino: ino, db), !item.deleted else { throw FileSystemError(.notFound) }
                guard item.itemKind != .directory, !item.isLink else { throw FileSystemError(.notPermitted, "folders cannot be linked") }
                let folder = try Self.liveDirectory(newParent, db)
                if try ItemRow.child(of: newParent, named: name, db) != nil { throw FileSystemError(.exists) }
                guard try ItemRow.nameCount(of: item.itemID, db) < Self.maxNames else { throw FileSystemError(.tooManyLinks) }
                var link = ItemRow.newLink(to: item.itemID, parent: newParent, name: name, now: now)
                // Every name of an item syncs, or none: `ln` across the line fails as across filesystems.
                link.ignoreMarks = try ignoreMarks(of: name, isDirectory: false, in: folder, db)
                guard link.isIgnored == item.isIgnored else {
                    throw FileSystemError(.crossDevice, "\(name) would \(item.isIgnored ? "sync" : "be ignored") while \(item.itemName) \(item.isIgnored ? "is ignored" : "syncs")")
                }
                link.markChanged(.metadata, now: now)
                try link.insert(db)
                item.ctime = now
                try item.update(db)
                try ItemRow.touchFolders([newParent], now: now, pushed: !link.isIgnored, db)
                return (item, link)
            }
        }
        // The reply is an entry: the kernel holds one more reference to the item's inode.
        handles.addLookup(item.inode)
        sync.localChange()
        emit(.created, created.inode)
        return try attributes(of: item)
    }

    /// Removes the name `row` (an item's own, or a link): the item goes with its last name;
    /// while it has another, its own name going moves it to a link's place (the link row
    /// goes), so the item keeps its id, history and one row.
    static func removeName(_ row: ItemRow, _ db: Database, now: Int64) throws -> NameRemoval {
        var row = row
        if row.isLink {
            row.deleted = true
            row.markChanged(.metadata, now: now)
            try row.update(db)
            if var item = try ItemRow.resolved(row, db) {
                item.ctime = now
                try item.update(db)
            }
            return .link(row.inode)
        }
        if var link = try ItemRow.links(to: row.itemID, db).first {
            link.deleted = true
            link.markChanged(.metadata, now: now)
            try link.update(db)
            row.parent = link.parent
            row.itemName = link.itemName
            // A name removed is no edit of the item, unless it was changed here already.
            row.markChanged(row.dirtyFlags.edited ? .metadata : [.metadata, .nameRemoved], now: now)
            try row.update(db)
            return .moved(linkRow: link.inode)
        }
        row.deleted = true
        row.markChanged(.metadata, now: now)
        try row.update(db)
        return .item(row.inode)
    }

    /// After the transaction that removed a name: an item gone is freed once nothing uses
    /// it; a link row goes once its delete needs no push.
    func settle(_ removal: NameRemoval) {
        switch removal {
        case .item(let ino):
            handles.markUnlinked(ino)
            if !handles.isReferenced(ino) { purge(ino) }
        case .link(let ino), .moved(linkRow: let ino):
            do {
                _ = try write(freeing: true) { db in try ItemRow.purgeIfSettled(ino, db) }
            } catch {
                // Left deleted; the start's reconciliation drops it.
                logger.error("cannot drop the removed link row \(ino): \(error)")
            }
        }
    }
}
