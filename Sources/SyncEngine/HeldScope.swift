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
    /// that waits, an item put where one that waits is committed, and the delete of a folder
    /// that has one that waits in it.
    func split(_ rows: [ItemRow], _ db: Database) throws -> (pushable: [ItemRow], heldBack: [ItemRow]) {
        guard !items.isEmpty else { return (rows, []) }
        var (pushable, heldBack): ([ItemRow], [ItemRow]) = ([], [])
        for row in rows {
            if try contains(row, db) { heldBack.append(row) } else { pushable.append(row) }
        }
        var changed = !heldBack.isEmpty
        while changed {
            changed = false
            let waitingNew = Set(heldBack.filter { $0.baseSeq == 0 }.map(\.inode))
            let waitingIDs = Set(heldBack.map(\.itemID))
            for (index, row) in pushable.enumerated().reversed() {
                guard try waits(row, newFolders: waitingNew, items: waitingIDs, db) else { continue }
                heldBack.append(pushable.remove(at: index))
                changed = true
            }
        }
        return (pushable, heldBack)
    }

    private func waits(_ row: ItemRow, newFolders: Set<Inode>, items: Set<ItemID>, _ db: Database) throws -> Bool {
        if row.deleted && row.itemKind == .directory {
            return try BaseSnapshots.children(of: row.itemID, db).contains(where: items.contains)
        }
        guard let parentIno = row.parent else { return false }
        if newFolders.contains(parentIno) { return true }
        guard !row.deleted, row.dirtyFlags.contains(.metadata), let parent = try ItemRow.find(ino: parentIno, db) else { return false }
        return try BaseSnapshots.holders(of: row.itemName, in: parent.itemID, db).contains(where: items.contains)
    }

    func contains(_ row: ItemRow, _ db: Database) throws -> Bool {
        guard !items.isEmpty else { return false }
        if items.contains(row.itemID) { return true }
        // A folder delete must take what the others have in it, a held item among them.
        if row.deleted && row.itemKind == .directory && parents.contains(row.itemID) { return true }
        for id in deletes {
            guard let folder = try ItemRow.find(id: id, db), folder.itemKind == .directory else { continue }
            if try ItemRow.isInside(row.inode, folder.inode, db) { return true }
        }
        guard !row.deleted, row.dirtyFlags.contains(.metadata), let parentIno = row.parent,
              let parent = try ItemRow.find(ino: parentIno, db) else { return false }
        if places.contains(Place(parent: parent.itemID, name: row.itemName)) { return true }
        return try BaseSnapshots.holders(of: row.itemName, in: parent.itemID, db).contains(where: items.contains)
    }
}
