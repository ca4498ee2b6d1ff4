import GRDB
import ItemModel
import MetadataStore

/// Gathers the trash entries of one record's deletes (remote or our own commit): each
/// delete is noted before the item's committed snapshot goes, with what the committed
/// tree still holds under it; at the end of the record, items whose folder the record
/// also deleted join that folder's entry. Every device that applies the record gathers
/// the same entries from the same committed tree, so the trash is shared.
struct TrashCollector {
    private struct Noted {
        var snapshot: ItemSnapshot
        var held: [ItemSnapshot]
    }

    private var noted: [ItemID: Noted] = [:]
    private var order: [ItemID] = []
    /// Items already gathered under a noted folder: noting them again adds nothing.
    private var held: Set<ItemID> = []
    /// The committed folders above the noted items (folder and name), each read once per
    /// record, so deleting a deep tree costs its size, not its size times its depth.
    private var above: [ItemID: (parent: ItemID, name: ByteString)] = [:]

    /// Call before the item's base snapshot is removed. Items never committed have none:
    /// nothing of them is in the store, so there is nothing to restore.
    mutating func note(deleting id: ItemID, _ db: Database) throws {
        guard noted[id] == nil, !held.contains(id), let snapshot = try BaseSnapshots.find(id, db) else { return }
        let inside = try Self.subtree(of: id, db)
        noted[id] = Noted(snapshot: snapshot, held: inside)
        held.formUnion(inside.map(\.id))
        order.append(id)
        try learnFolders(above: snapshot, db)
    }

    /// Writes the record's entries and starts over.
    mutating func record(seq: UInt64, device: String, time: Int64, batch: String?, _ db: Database) throws {
        defer { self = TrashCollector() }
        let tops = topsOfNoted()
        var members: [ItemID: [ItemSnapshot]] = [:]
        for id in order {
            guard let item = noted[id], let top = tops[id] else { continue }
            members[top, default: []].append(contentsOf: [item.snapshot] + item.held)
        }
        for id in order where tops[id] == id {
            // A link is a name, not an item: no entry of its own (one in a deleted folder
            // is in the folder's).
            guard let top = noted[id], top.snapshot.kind != .link else { continue }
            var items = members[id] ?? []
            if let batch, top.snapshot.kind == .directory {
                items += try Self.absorbed(into: top.snapshot, items, batch: batch, before: seq, db)
            }
            items = Self.parentsFirst(from: top.snapshot, items)
            try TrashEntries.add(TrashEntry(seq: seq, device: device, time: time, folder: folder(of: top.snapshot), items: items, batch: batch), db)
        }
    }

    /// Reads the committed folders above the item up to the first one already known.
    private mutating func learnFolders(above snapshot: ItemSnapshot, _ db: Database) throws {
        var parent = snapshot.parent
        while parent != .root, above[parent] == nil, let folder = try BaseSnapshots.placement(of: parent, db) {
            above[parent] = folder
            parent = folder.parent
        }
    }

    /// The names of the committed folders above the item, from the root, as they were
    /// when the record first reached them.
    private func folder(of snapshot: ItemSnapshot) -> [ByteString] {
        var names: [ByteString] = []
        var parent = snapshot.parent
        var seen: Set<ItemID> = []
        while parent != .root, seen.insert(parent).inserted, let folder = above[parent] {
            names.append(folder.name)
            parent = folder.parent
        }
        return names.reversed()
    }

    /// For each noted item, the highest noted item above it through noted folders only
    /// (itself when its folder was not deleted), each chain walked once.
    private func topsOfNoted() -> [ItemID: ItemID] {
        var tops: [ItemID: ItemID] = [:]
        for id in order where tops[id] == nil {
            var chain: [ItemID] = []
            var seen: Set<ItemID> = []
            var current = id
            var top: ItemID?
            while top == nil, seen.insert(current).inserted {
                chain.append(current)
                if let known = tops[current] {
                    top = known
                } else if let parent = noted[current]?.snapshot.parent, noted[parent] != nil {
                    current = parent
                } else {
                    top = current
                }
            }
            for member in chain { tops[member] = top ?? current }
        }
        return tops
    }

    /// A large delete (`rm -rf` of a big tree) spans the records of one push (a batch):
    /// what was inside the folder went in its earlier records, as entries of their own.
    /// Those of the batch from inside this folder join its entry.
    private static func absorbed(into folder: ItemSnapshot, _ items: [ItemSnapshot], batch: String, before seq: UInt64, _ db: Database) throws -> [ItemSnapshot] {
        var inside = Set(items.map(\.id) + [folder.id])
        var taken: [ItemSnapshot] = []
        // Oldest first, so a folder's entry is taken before what was in it. A batch has at
        // most a few hundred records (2,000 operations each).
        for entry in try TrashEntries.after(seq > 1000 ? seq - 1000 : 0, db).reversed() where entry.batch == batch && entry.seq < seq {
            guard inside.contains(entry.top.parent), !inside.contains(entry.top.id) else { continue }
            taken += entry.items
            inside.formUnion(entry.items.map(\.id))
            try TrashEntries.remove(seq: entry.seq, id: entry.top.id, db)
        }
        return taken
    }

    /// What the committed tree holds under the item (a writer that deleted a folder with
    /// things in it, or a record that deleted them first).
    private static func subtree(of id: ItemID, _ db: Database) throws -> [ItemSnapshot] {
        var found: [ItemSnapshot] = []
        var queue = [id]
        var seen: Set<ItemID> = [id]
        while let next = queue.popLast() {
            for child in try BaseSnapshots.children(of: next, db) where seen.insert(child).inserted {
                guard let snapshot = try BaseSnapshots.find(child, db) else { continue }
                found.append(snapshot)
                queue.append(child)
            }
        }
        return found
    }

    /// The top item, then everything reachable from it, each folder before its contents.
    private static func parentsFirst(from top: ItemSnapshot, _ items: [ItemSnapshot]) -> [ItemSnapshot] {
        let children = Dictionary(grouping: items.filter { $0.id != top.id }, by: \.parent)
        var ordered = [top]
        var seen: Set<ItemID> = [top.id]
        var index = 0
        while index < ordered.count {
            for child in children[ordered[index].id] ?? [] where seen.insert(child.id).inserted { ordered.append(child) }
            index += 1
        }
        return ordered
    }
}
