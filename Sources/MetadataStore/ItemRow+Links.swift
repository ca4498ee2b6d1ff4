import GRDB
import Inodes
import ItemModel

/// Hard links. An item's own row holds its first name and all its attributes; each other
/// name is a row of kind `link` that names it by id (`linkTo`). A link row is never given
/// to the kernel: a name resolves to the item it names, whose inode serves every name.
/// Invariant: a live link names a live item that is not a folder and not a link.
extension ItemRow {
    private static let linksTo = "SELECT \(ItemRowColumns.list) FROM item WHERE linkTo = ? AND deleted = 0 ORDER BY ino"

    /// Whether this row is another name of an item rather than an item.
    public var isLink: Bool { itemKind == .link }

    /// The live links to `id`, oldest first.
    public static func links(to id: ItemID, _ db: Database) throws -> [ItemRow] {
        try ItemRowColumns.fetchAll(db.cachedStatement(sql: linksTo), arguments: [id.rawValue]).map(\.row)
    }

    /// How many names the item has: its own and its live links (`st_nlink`).
    public static func nameCount(of id: ItemID, _ db: Database) throws -> Int {
        let links = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM item WHERE linkTo = ? AND deleted = 0"), arguments: [id.rawValue]) ?? 0
        return links + 1
    }

    /// The item a name stands for: the row itself, or the item a link names (nil if that
    /// is gone, which the invariant rules out).
    public static func resolved(_ row: ItemRow, _ db: Database) throws -> ItemRow? {
        guard row.isLink else { return row }
        guard let id = row.linkedItem else { return nil }
        return try find(id: id, db)
    }

    /// The item living at `name` in `parent`, through a link if the name is one.
    public static func resolvedChild(of parent: Inode, named name: ByteString, _ db: Database) throws -> ItemRow? {
        guard let row = try child(of: parent, named: name, db) else { return nil }
        return try resolved(row, db)
    }

    /// A new link row: `name` in `parent` for the item `item`.
    public static func newLink(to item: ItemID, parent: Inode, name: ByteString, now: Int64) -> ItemRow {
        var row = ItemRow(id: .random(), parent: parent, name: name, kind: .link, mode: 0, uid: 0, gid: 0, size: 0, mtime: 0, ctime: now)
        row.linkedItem = item
        row.atime = 0
        row.contentState = .local
        return row
    }
}
