import GRDB
import Inodes
import ItemModel
import MetadataStore

/// What the changes held for writers here keep from the push: their own items (whose rows
/// are not based on the committed tree until the change is applied), everything inside a
/// folder whose delete is held (committed with a parent the others no longer have, it would
/// be refused there), an item put where a held item is committed (the others have the
/// held one there: where this device last saw it, or where its held change put it), and
/// the delete of a folder a held change puts an item in (this device does not know it is
/// there, so its delete would not name it).
struct HeldScope: Sendable {
    private struct Place: Hashable {
        var parent: ItemID
        var name: ByteString
    }

    private let items: Set<ItemID>
    private let deletes: [ItemID]
    private let places: Set<Place>
    /// The folders the held upserts put their items in.
    private let parents: Set<ItemID>

    init(_ operations: [JournalOperation]) {
        items = Set(operations.map(\.itemID))
        var deletes: [ItemID] = []
        var places: Set<Place> = []
        for operation in operations {
            switch operation {
            case .delete(let id): deletes.append(id)
            case .upsert(let item): places.insert(Place(parent: item.parent, name: item.name))
            }
        }
        self.deletes = deletes
        self.places = places
        parents = Set(places.map(\.parent))
    }

    /// The rows it keeps back, and what they in turn keep back: an item inside a new folder
    /// that waits, an item put where one that waits (or a held item) is committed, and the
    /// delete of a folder that has one of these in it. The database is asked a bounded
    /// number of questions per row, once; the closure is computed in memory.
    func split(_ rows: [ItemRow], _ db: Database) throws -> (pushable: [ItemRow], heldBack: [ItemRow]) {
        guard !items.isEmpty else { return (rows, []) }
        let folders = try heldFolders(db)
        var waiting = Set<Inode>()
        var waitingNew = Set<Inode>()
        var waitingIDs = items
        var candidates: [(row: ItemRow, neighbours: [ItemID])] = []
        func wait(_ row: ItemRow) {
            waiting.insert(row.inode)
            waitingIDs.insert(row.itemID)
            if row.baseSeq == 0 { waitingNew.insert(row.inode) }
        }
        for row in rows {
            if try isHeld(row, folders: folders, db) { wait(row) } else { candidates.append((row, try committedNeighbours(row, db))) }
        }
        var changed = true
        while changed {
            changed = false
            for (row, neighbours) in candidates where !waiting.contains(row.inode) {
                // A folder moved into a folder whose own move waits, waits too: pushed alone, it
                // may land inside itself where the others have that folder (a cycle each reader,
                // and a device joining later, would fix with a change of its own).
                let parentWaits = row.parent.map { waitingNew.contains($0) || (row.itemKind == .directory && waiting.contains($0)) } ?? false
                guard parentWaits || neighbours.contains(where: waitingIDs.contains) else { continue }
                wait(row)
                changed = true
            }
        }
        return (rows.filter { !waiting.contains($0.inode) }, rows.filter { waiting.contains($0.inode) })
    }

    /// One row alone (the next part of a planned order): held back by a held change itself,
    /// or by needing a held item's committed place. What it needs in turn is `split`'s.
    func contains(_ row: ItemRow, _ db: Database) throws -> Bool {
        guard !items.isEmpty else { return false }
        return try isHeld(row, folders: heldFolders(db), db) || committedNeighbours(row, db).contains(where: items.contains)
    }

    /// The committed items a row's push needs settled first: what the others have in a
    /// folder it deletes, or what holds the name it takes.
    private func committedNeighbours(_ row: ItemRow, _ db: Database) throws -> [ItemID] {
        if row.deleted && row.itemKind == .directory { return try BaseSnapshots.children(of: row.itemID, db) }
        guard !row.deleted, row.dirtyFlags.contains(.metadata), let parent = try parentID(row, db) else { return [] }
        return try BaseSnapshots.holders(of: row.itemName, in: parent, db)
    }

    /// The folders whose delete is held, as inodes here.
    private func heldFolders(_ db: Database) throws -> [Inode] {
        try deletes.compactMap { id in try ItemRow.find(id: id, db).flatMap { $0.itemKind == .directory ? $0.inode : nil } }
    }

    /// The held item itself, what is inside a folder whose delete is held, the delete of a
    /// folder a held upsert puts an item in, and an item put where a held upsert puts one.
    private func isHeld(_ row: ItemRow, folders: [Inode], _ db: Database) throws -> Bool {
        if items.contains(row.itemID) { return true }
        // A link is a name of its item: nothing of a held item is pushed (a link to an item
        // whose delete is held would name an item the committed tree no longer has).
        if let item = row.linkedItem, items.contains(item) { return true }
        if row.deleted && row.itemKind == .directory && parents.contains(row.itemID) { return true }
        for folder in folders where try ItemRow.isInside(row.inode, folder, db) { return true }
        guard !row.deleted, row.dirtyFlags.contains(.metadata), let parent = try parentID(row, db) else { return false }
        return places.contains(Place(parent: parent, name: row.itemName))
    }

    private func parentID(_ row: ItemRow, _ db: Database) throws -> ItemID? {
        try row.parent.flatMap { try ItemRow.find(ino: $0, db) }?.itemID
    }
}
