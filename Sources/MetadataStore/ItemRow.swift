import Foundation
import GRDB
import Inodes
import ItemModel

/// One item on this device: its committed base (`baseSeq`, `blocks`) and its local
/// state, in one row. The inode number is the row id, so it is stable across remounts.
public struct ItemRow: Codable, Sendable, Hashable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "item"

    var ino: Inode?
    var id: String
    /// The parent's inode; nil for the root and for items no longer in the tree.
    public var parent: Inode?
    var name: Data
    var kind: String
    /// Permission bits (0o7777).
    public var mode: Int64
    public var uid: Int64
    public var gid: Int64
    public var size: Int64
    /// Nanoseconds since the epoch.
    public var mtime: Int64
    public var ctime: Int64
    public var atime: Int64
    var target: Data?
    /// JSON array of the committed version's blocks (files).
    var blocks: Data?
    var content: Int
    /// The journal sequence of the committed version this row is based on; 0 = never committed.
    public var baseSeq: Int64
    var dirty: Int
    /// Gone from the tree; kept while the kernel or an open handle still uses the inode,
    /// or until the delete is pushed.
    public var deleted: Bool
    /// Bumped by every local change, so a push clears `dirty` only if nothing changed meanwhile.
    public var changeGen: Int64
    /// This device's pin state: nil inherits from the folder above, false/true override.
    public var pinned: Bool?
    /// A device node's device number (bit pattern of `dev_t`).
    public var rdev: Int64?
    /// A link's item (`ItemKind.link`): the id of the item it is another name of.
    var linkTo: String?
    /// `IgnoreMarks`: why the item stays on this device, never pushed (0: it syncs).
    var ignored: Int

    enum StoredColumns {
        static let ino = Column(CodingKeys.ino)
        static let id = Column(CodingKeys.id)
        static let parent = Column(CodingKeys.parent)
        static let name = Column(CodingKeys.name)
        static let dirty = Column(CodingKeys.dirty)
        static let deleted = Column(CodingKeys.deleted)
        static let content = Column(CodingKeys.content)
        static let kind = Column(CodingKeys.kind)
    }

    public init(
        id: ItemID, parent: Inode?, name: ByteString, kind: ItemKind, mode: UInt32, uid: UInt32, gid: UInt32,
        size: Int64, mtime: Int64, ctime: Int64? = nil, target: ByteString? = nil
    ) {
        self.ino = nil
        self.id = id.rawValue
        self.parent = parent
        self.name = Data(name.bytes)
        self.kind = kind.rawValue
        self.mode = Int64(mode & 0o7777)
        self.uid = Int64(uid)
        self.gid = Int64(gid)
        self.size = size
        self.mtime = mtime
        self.ctime = ctime ?? mtime
        self.atime = mtime
        self.target = target.map { Data($0.bytes) }
        self.blocks = nil
        self.content = ContentState.placeholder.rawValue
        self.baseSeq = 0
        self.dirty = 0
        self.deleted = false
        self.changeGen = 0
        self.pinned = nil
        self.rdev = nil
        self.linkTo = nil
        self.ignored = 0
    }

    /// Every column as stored (`ItemRowColumns`).
    init(
        ino: Inode, id: String, parent: Inode?, name: Data, kind: String, mode: Int64, uid: Int64, gid: Int64,
        size: Int64, mtime: Int64, ctime: Int64, atime: Int64, target: Data?, blocks: Data?, content: Int,
        baseSeq: Int64, dirty: Int, deleted: Bool, changeGen: Int64, pinned: Bool?, rdev: Int64?, linkTo: String?, ignored: Int
    ) {
        self.ino = ino
        self.id = id
        self.parent = parent
        self.name = name
        self.kind = kind
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.mtime = mtime
        self.ctime = ctime
        self.atime = atime
        self.target = target
        self.blocks = blocks
        self.content = content
        self.baseSeq = baseSeq
        self.dirty = dirty
        self.deleted = deleted
        self.changeGen = changeGen
        self.pinned = pinned
        self.rdev = rdev
        self.linkTo = linkTo
        self.ignored = ignored
    }

    /// Decoded by hand: GRDB's Codable decoder looked each column up by key and was a fifth
    /// of the cost of a directory listing.
    public init(row: Row) throws {
        ino = row["ino"]
        id = row["id"]
        parent = row["parent"]
        name = row["name"]
        kind = row["kind"]
        mode = row["mode"]
        uid = row["uid"]
        gid = row["gid"]
        size = row["size"]
        mtime = row["mtime"]
        ctime = row["ctime"]
        atime = row["atime"]
        target = row["target"]
        blocks = row["blocks"]
        content = row["content"]
        baseSeq = row["baseSeq"]
        dirty = row["dirty"]
        deleted = row["deleted"]
        changeGen = row["changeGen"]
        pinned = row["pinned"]
        rdev = row["rdev"]
        linkTo = row["linkTo"]
        // A database read without its migrations (`ubiqfs reset`) may predate the column.
        ignored = row["ignored"] ?? 0
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        ino = Inode(inserted.rowID)
    }

    // MARK: Writing, by hand like the reads: GRDB's Codable persistence built each statement
    // anew from an encoded dictionary (30 µs of a create's 150 µs transaction).

    /// The stored columns after `ino`, in the order of `writtenValues`; `ItemRowColumns`
    /// reads `ino` and then these.
    static let columns = "id, parent, name, kind, mode, uid, gid, size, mtime, ctime, atime, target, blocks, content, baseSeq, dirty, deleted, changeGen, pinned, rdev, linkTo, ignored"
    private static let insertSQL = "INSERT INTO item (ino, \(columns)) VALUES (\(Array(repeating: "?", count: 23).joined(separator: ", ")))"
    private static let updateSQL = "UPDATE item SET \(columns.split(separator: ", ").map { "\($0) = ?" }.joined(separator: ", ")) WHERE ino = ?"

    private var writtenValues: [(any DatabaseValueConvertible)?] {
        [id, parent, name, kind, mode, uid, gid, size, mtime, ctime, atime, target, blocks, content, baseSeq, dirty, deleted, changeGen, pinned, rdev, linkTo, ignored]
    }

    /// Inserts the row; without an `ino` (NULL for SQLite) it gets the next one.
    public mutating func insert(_ db: Database) throws {
        try db.cachedStatement(sql: Self.insertSQL).execute(arguments: StatementArguments([ino] + writtenValues))
        ino = Inode(db.lastInsertedRowID)
    }

    /// Writes every column of the row with this `ino`; throws `RecordError.recordNotFound`
    /// when there is none, as GRDB's `update` does.
    public func update(_ db: Database) throws {
        let key = ino ?? 0
        try db.cachedStatement(sql: Self.updateSQL).execute(arguments: StatementArguments(writtenValues + [key]))
        if db.changesCount == 0 {
            throw RecordError.recordNotFound(databaseTableName: Self.databaseTableName, key: ["ino": key.databaseValue])
        }
    }

    // MARK: Typed views of the stored columns (the stored ones are MetadataStore's own)

    public var inode: Inode { ino ?? 0 }
    public var itemID: ItemID {
        get { ItemID(id) }
        set { id = newValue.rawValue }
    }
    public var itemName: ByteString {
        get { ByteString(Array(name)) }
        set { name = Data(newValue.bytes) }
    }
    public var itemKind: ItemKind {
        get { ItemKind(rawValue: kind) ?? .file }
        set { kind = newValue.rawValue }
    }
    public var contentState: ContentState {
        get { ContentState(rawValue: content) ?? .placeholder }
        set { content = newValue.rawValue }
    }
    public var dirtyFlags: DirtyFlags {
        get { DirtyFlags(rawValue: dirty) }
        set { dirty = newValue.rawValue }
    }
    /// A link's item: the one it is another name of; nil for every other kind.
    public var linkedItem: ItemID? {
        get { linkTo.map(ItemID.init) }
        set { linkTo = newValue?.rawValue }
    }
    public var symlinkTarget: ByteString? {
        get { target.map { ByteString(Array($0)) } }
        set { target = newValue.map { Data($0.bytes) } }
    }

    public var blockList: [BlockReference] {
        get { blocks.flatMap { try? JSONDecoder().decode([BlockReference].self, from: $0) } ?? [] }
        set { blocks = newValue.isEmpty ? nil : try? JSONEncoder().encode(newValue) }
    }

    /// Records a local change: what kind, and a new generation (for items that are pushed).
    public mutating func markChanged(_ flags: DirtyFlags, now: Int64) {
        ctime = now
        changeGen += 1
        guard Self.isPushed(inode) && ignored == 0 else { return }
        if !flags.contains(.nameRemoved) { dirtyFlags.remove(.nameRemoved) }
        dirtyFlags.formUnion(flags)
    }

    /// Whether the item's changes are pushed as an item's: all but the root, which has no
    /// upsert and no dirty flags. Its changes are told by its `changeGen` and go in a
    /// record's `root` field (`RootState`).
    public static func isPushed(_ ino: Inode) -> Bool { ino != .root }
}

extension ItemRow {
    // Cached statements read by position (ItemRowColumns): these run for every kernel
    // operation and every journal item, and preparing a statement costs more than running it.
    private static let byIno = "SELECT \(ItemRowColumns.list) FROM item WHERE ino = ?"
    private static let byID = "SELECT \(ItemRowColumns.list) FROM item WHERE id = ?"
    private static let byName = "SELECT \(ItemRowColumns.list) FROM item WHERE parent = ? AND name = ? AND deleted = 0"
    private static let byParent = "SELECT \(ItemRowColumns.list) FROM item WHERE parent = ? AND deleted = 0 AND ino > ? ORDER BY ino LIMIT ?"

    public static func find(ino: Inode, _ db: Database) throws -> ItemRow? {
        try ItemRowColumns.fetchOne(db.cachedStatement(sql: byIno), arguments: [ino])?.row
    }

    public static func find(id: ItemID, _ db: Database) throws -> ItemRow? {
        try ItemRowColumns.fetchOne(db.cachedStatement(sql: byID), arguments: [id.rawValue])?.row
    }

    /// The live child with this name (deleted rows keep their name but are not in the tree).
    public static func child(of parent: Inode, named name: ByteString, _ db: Database) throws -> ItemRow? {
        try ItemRowColumns.fetchOne(db.cachedStatement(sql: byName), arguments: [parent, Data(name.bytes)])?.row
    }

    /// `name` if no live item in the folder has it, else `name (2)`, `name (3)`... the first free.
    public static func freeName(_ name: ByteString, in parent: Inode, _ db: Database) throws -> ByteString {
        if try child(of: parent, named: name, db) == nil { return name }
        var number = 2
        while true {
            let candidate = ItemName.numbered(name, number)
            if try child(of: parent, named: candidate, db) == nil { return candidate }
            number += 1
        }
    }

    /// Live children in inode order, after `afterIno`: readdir offsets stay valid while the folder changes.
    public static func children(of parent: Inode, after afterIno: Inode, limit: Int, _ db: Database) throws -> [ItemRow] {
        try ItemRowColumns.fetchAll(db.cachedStatement(sql: byParent), arguments: [parent, afterIno, limit]).map(\.row)
    }

    /// Live subfolders of a folder (its link count is 2 plus this).
    public static func subfolderCount(_ parent: Inode, _ db: Database) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM item WHERE parent = ? AND deleted = 0 AND kind = 'directory'"),
            arguments: [parent]) ?? 0
    }

    public static func hasChildren(_ parent: Inode, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM item WHERE parent = ? AND deleted = 0)"), arguments: [parent]) ?? false
    }

    /// The item's path inside the mount ("/a/b"), for people and the watch API; names
    /// that are not UTF-8 show with replacement characters.
    public static func path(of ino: Inode, _ db: Database) throws -> String {
        var parts: [String] = []
        var current: Inode? = ino
        while let value = current, value != .root, parts.count < 10_000 {
            guard let row = try find(ino: value, db) else { return "(inode \(ino))" }
            parts.append(row.itemName.description)
            current = row.parent
        }
        return "/" + parts.reversed().joined(separator: "/")
    }

    /// The path's bytes under the mount ("/a/b"), names as stored (not necessarily
    /// UTF-8); nil if the item or a folder above it is gone or deleted.
    public static func pathBytes(of ino: Inode, _ db: Database) throws -> [UInt8]? {
        var parts: [[UInt8]] = []
        var current: Inode? = ino
        while let value = current, value != .root {
            guard parts.count < 10_000, let row = try find(ino: value, db), !row.deleted else { return nil }
            parts.append(row.itemName.bytes)
            current = row.parent
        }
        return parts.reversed().reduce(into: []) { path, name in path += [UInt8(ascii: "/")] + name }
    }

    /// Whether `ino` is `ancestor` or inside it (bounded: parents come from the store too).
    public static func isInside(_ ino: Inode, _ ancestor: Inode, _ db: Database) throws -> Bool {
        var current: Inode? = ino
        var steps = 0
        while let value = current, steps < 100_000 {
            if value == ancestor { return true }
            current = try Inode.fetchOne(db.cachedStatement(sql: "SELECT parent FROM item WHERE ino = ?"), arguments: [value])
            steps += 1
        }
        return false
    }

    /// The effective pin state: the item's own explicit state, else the nearest one above it
    /// that reaches it (`PinState.reaches`).
    /// An item with several names is pinned by a pinned folder above any of them.
    public static func isPinned(_ ino: Inode, _ db: Database) throws -> Bool {
        guard let row = try find(ino: ino, db) else { return false }
        if let pinned = row.pinned { return pinned }
        if try row.inheritedPin(from: pinStates(from: row.parent, db)) { return true }
        guard row.itemKind != .directory, !row.isLink else { return false }
        return try links(to: row.itemID, db).contains { link in try link.inheritedPin(from: pinStates(from: link.parent, db)) }
    }

    /// The pin the item inherits from `states` (those of the folders above it, nearest first).
    public func inheritedPin(from states: [PinState]) -> Bool {
        states.first { $0.reaches(self) }?.pinned ?? false
    }

    /// The explicit pin states of `ino` and the folders above it, nearest first, up to the
    /// first that reaches everything below it.
    public static func pinStates(from ino: Inode?, _ db: Database) throws -> [PinState] {
        var states: [PinState] = []
        var current = ino
        var steps = 0
        while let value = current, steps < 100_000 {
            let sql = "SELECT parent, pinned, pinned_uid, pinned_gid FROM item WHERE ino = ?"
            guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: [value]) else { break }
            if let pinned = row["pinned"] as Bool? {
                let setter = (row["pinned_uid"] as Int64?).map { PinSetter(uid: $0, gid: row["pinned_gid"] ?? -1) }
                states.append(PinState(pinned: pinned, setter: setter))
                if setter == nil { break }
            }
            current = row["parent"]
            steps += 1
        }
        return states
    }

    /// Records who set the item's explicit pin state (nil: the mount's owner or root).
    public static func setPinSetter(_ ino: Inode, _ setter: PinSetter?, _ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE item SET pinned_uid = ?, pinned_gid = ? WHERE ino = ?")
            .execute(arguments: [setter?.uid, setter?.gid, ino])
    }

    /// Whether `uid` (with its primary group `gid`) could change the item itself: root,
    /// its owner (who may chmod it), or a user its mode bits let write it. Supplementary
    /// groups are not known: the narrower answer, for effects not asked per item.
    public func changeable(byUID uid: Int64, gid: Int64) -> Bool {
        if uid == 0 || uid == self.uid { return true }
        if gid == self.gid { return mode & 0o020 != 0 }
        return mode & 0o002 != 0
    }

    /// Every live item under a folder (not the folder itself), breadth first.
    public static func descendants(of ino: Inode, _ db: Database) throws -> [ItemRow] {
        try ItemRow.fetchAll(db, sql: """
            WITH RECURSIVE sub(ino) AS (
                SELECT ino FROM item WHERE parent = ? AND deleted = 0
                UNION ALL SELECT item.ino FROM item JOIN sub ON item.parent = sub.ino WHERE item.deleted = 0
            ) SELECT item.* FROM item JOIN sub ON item.ino = sub.ino
            """, arguments: [ino])
    }

    /// Rows with local changes not yet committed.
    public static func dirtyRows(_ db: Database) throws -> [ItemRow] {
        try ItemRow.filter(StoredColumns.dirty != 0).order(StoredColumns.ino).fetchAll(db)
    }
}
