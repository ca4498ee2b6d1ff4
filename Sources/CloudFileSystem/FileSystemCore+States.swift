import GRDB
import Inodes
import ItemModel
import MetadataStore

/// The states of a folder's items in one request, for file managers (docs/DESKTOP.md):
/// one read of the folder instead of three xattr reads per item. Never downloads.
extension FileSystemCore {
    /// The live children of `folder` whose names are UTF-8 (others are left to their
    /// xattrs); only those named in `names` when it is given (a view's few changed items).
    public func childStates(_ folder: Inode, names: [String]? = nil) throws(FileSystemError) -> [ItemStateSummary] {
        let parent = try row(folder)
        guard parent.itemKind == .directory else { throw FileSystemError(.notDirectory, "not a folder") }
        let (rows, items, asked, folderPins) = try read { db -> ([ItemRow], [ItemRow], Int, [PinState]) in
            let pinned = try ItemRow.pinStates(from: folder, db)
            // A link shows the state of the item it names.
            func items(_ rows: [ItemRow]) throws -> [ItemRow] { try rows.map { try ItemRow.resolved($0, db) ?? $0 } }
            guard let names else {
                let rows = try Self.allChildren(of: folder, db)
                return (rows, try items(rows), Int.max, pinned)
            }
            let asked = try Set(names).compactMap { try ItemRow.child(of: folder, named: ByteString(Array($0.utf8)), db) }
            // Their conflict copies, and the originals of copies among them, decide the marks.
            let copies = try ItemRow.conflictCopyCandidates(in: folder, db)
            let originals = try copies.flatMap { ItemName.conflictOriginals(of: $0.itemName) }.compactMap { try ItemRow.child(of: folder, named: $0, db) }
            var seen = Set<Inode>()
            let rows = (asked + copies + originals).filter { seen.insert($0.inode).inserted }
            return (rows, try items(rows), asked.count, pinned)
        }
        let (originals, copies) = Self.conflictPairs(rows.map(\.itemName))
        return rows.indices.prefix(asked).compactMap { index -> ItemStateSummary? in
            let row = items[index]
            guard let name = String(validating: rows[index].itemName.bytes, as: UTF8.self) else { return nil }
            let transfer = downloads.transfers.transfer(row.inode)
            return ItemStateSummary(
                name: name, state: state(of: row, transfer: transfer), pinned: row.pinned ?? row.inheritedPin(from: folderPins),
                conflicts: originals.contains(index), conflictCopy: copies.contains(index), progress: progress(of: row, transfer: transfer)
            )
        }
    }

    private static func allChildren(of folder: Inode, _ db: Database) throws -> [ItemRow] {
        var rows: [ItemRow] = []
        var after: Inode = 0
        while true {
            let page = try ItemRow.children(of: folder, after: after, limit: 5000, db)
            rows += page
            guard let last = page.last, page.count == 5000 else { return rows }
            after = last.inode
        }
    }

    /// Which names (by index) have conflict copies beside them, and which are such copies.
    static func conflictPairs(_ names: [ByteString]) -> (originals: Set<Int>, copies: Set<Int>) {
        let guesses = names.map(ItemName.conflictOriginals)
        guard guesses.contains(where: { !$0.isEmpty }) else { return ([], []) }
        var byName: [ByteString: Int] = [:]
        for (index, name) in names.enumerated() { byName[name] = index }
        var originals = Set<Int>()
        var copies = Set<Int>()
        for copy in names.indices where !guesses[copy].isEmpty {
            var found = guesses[copy].compactMap { byName[$0] }
            if found.isEmpty && names[copy].bytes.count >= ItemName.maxLength - 4 { found = Array(names.indices) }
            for original in found where original != copy && ItemName.isConflictCopy(names[copy], of: names[original]) {
                originals.insert(original)
                copies.insert(copy)
            }
        }
        return (originals, copies)
    }
}
