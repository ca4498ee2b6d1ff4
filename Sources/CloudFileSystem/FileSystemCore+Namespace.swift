import ContentCache
import FileCoordinator
import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import MetadataStore
import ThumbnailService
import SyncEngine

/// Names: creating items, removing them, renaming and reading symlinks. Each change takes
/// exclusive leases on the folders it changes (and the items it moves or removes).
extension FileSystemCore {
    // MARK: Creating

    /// `marks`: the item's ignore marks, when they are known (an ignored item put back
    /// after a reset) rather than found from its place.
    func insertNew(
        parent: Inode, name: [UInt8], kind: ItemKind, mode: UInt32, caller: Caller, target: ByteString? = nil, rdev: UInt64? = nil,
        marks: IgnoreMarks? = nil
    ) throws(FileSystemError) -> ItemRow {
        let itemName = try Self.checkName(name)
        let now = Timestamp.now()
        return try withLeases([(parent, .exclusive)], "create") { () throws(FileSystemError) in
            var created = try write { db -> ItemRow in
                let folder = try Self.liveDirectory(parent, db)
                if try ItemRow.child(of: parent, named: itemName, db) != nil { throw FileSystemError(.exists) }
                var gid = caller.gid
                var mode = mode & 0o7777
                if folder.mode & 0o2000 != 0 {
                    gid = UInt32(folder.gid)
                    if kind == .directory { mode |= 0o2000 }
                }
                var row = ItemRow(
                    id: .random(), parent: parent, name: itemName, kind: kind, mode: mode,
                    uid: caller.uid, gid: gid, size: Int64(target?.bytes.count ?? 0), mtime: now, target: target
                )
                row.contentState = .local
                row.rdev = rdev.map { Int64(bitPattern: $0) }
                row.ignoreMarks = try marks ?? ignoreMarks(of: itemName, isDirectory: kind == .directory, in: folder, db)
                row.markChanged(kind == .file ? [.metadata, .content] : .metadata, now: now)
                try row.insert(db)
                // An ignored item's name changes its folder here only: nothing to push.
                try ItemRow.touchFolders([parent], now: now, pushed: !row.isIgnored, db)
                return row
            }
            if kind == .file {
                do {
                    try cache.createEmpty(created.inode)
                } catch {
                    do {
                        _ = try metadata.write { db in try ItemRow.deleteOne(db, key: created.inode) }
                    } catch let cleanup {
                        // The program gets the cache's error; the row, left without a cache
                        // file, becomes an empty file at the next start (StateReconciler).
                        logger.error("cannot undo the create of inode \(created.inode): \(cleanup)")
                    }
                    throw Self.wrap(error)
                }
                _ = handles.noteWrite(created.inode, .unknown)
            }
            created.contentState = .local
            handles.addLookup(created.inode)
            if itemName.bytes == Self.ignoreFileName { ignoreRulesChanged(in: parent) }
            if !created.isIgnored { sync.localChange() }
            emit(.created, created.inode)
            return created
        }
    }

    public func mkdir(parent: Inode, name: [UInt8], mode: UInt32, caller: Caller) throws(FileSystemError) -> ItemAttributes {
        try attributes(of: insertNew(parent: parent, name: name, kind: .directory, mode: mode, caller: caller))
    }

    public func symlink(parent: Inode, name: [UInt8], target: [UInt8], caller: Caller) throws(FileSystemError) -> ItemAttributes {
        guard !target.isEmpty else { throw FileSystemError(.notFound, "empty symlink target") }
        guard target.count <= RecordValidator.maxTargetLength else { throw FileSystemError(.nameTooLong) }
        return try attributes(of: insertNew(parent: parent, name: name, kind: .symlink, mode: 0o777, caller: caller, target: ByteString(target)))
    }

    public func mknod(parent: Inode, name: [UInt8], mode: UInt32, rdev: UInt64 = 0, caller: Caller) throws(FileSystemError) -> ItemAttributes {
        let kind: ItemKind
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG), 0: kind = .file
        case UInt32(S_IFIFO): kind = .fifo
        case UInt32(S_IFSOCK): kind = .socket
        case UInt32(S_IFCHR): kind = .characterDevice
        case UInt32(S_IFBLK): kind = .blockDevice
        default: throw FileSystemError(.invalid, "unknown file type")
        }
        return try attributes(of: insertNew(parent: parent, name: name, kind: kind, mode: mode, caller: caller, rdev: kind.isDevice ? rdev : nil))
    }

    public func create(parent: Inode, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws(FileSystemError) -> (ItemAttributes, UInt64) {
        let row = try insertNew(parent: parent, name: name, kind: .file, mode: mode, caller: caller)
        // A new file is empty and local: it never waits for content.
        guard let opened = try openFile(row, flags: flags & ~O_TRUNC, created: true) else { throw FileSystemError(.io, "new file \(row.inode) is a placeholder") }
        return (try attributes(of: row), opened.handle)
    }

    // MARK: Removing

    public func unlink(parent: Inode, name: [UInt8], directory: Bool) throws(FileSystemError) {
        let itemName = ByteString(name)
        let (victim, item) = try readUnisolated { db -> (ItemRow?, ItemRow?) in
            guard let row = try ItemRow.child(of: parent, named: itemName, db) else { return (nil, nil) }
            return (row, try ItemRow.resolved(row, db))
        }
        guard let victim, let item else { throw FileSystemError(.notFound) }
        let removedPath = watchedPath(victim.inode)
        var leases: [(Inode, LeaseAccess)] = [(parent, .exclusive), (victim.inode, .exclusive)]
        if item.inode != victim.inode { leases.append((item.inode, .exclusive)) }
        let removal = try withLeases(leases, "remove") { () throws(FileSystemError) in
            try write(freeing: true) { db -> NameRemoval in
                guard let row = try ItemRow.find(ino: victim.inode, db), !row.deleted, row.parent == parent, row.itemName == itemName else {
                    throw FileSystemError(.notFound)
                }
                if directory {
                    guard row.itemKind == .directory else { throw FileSystemError(.notDirectory) }
                    if try ItemRow.hasChildren(row.inode, db) { throw FileSystemError(.notEmpty) }
                } else if row.itemKind == .directory {
                    throw FileSystemError(.isDirectory)
                }
                let now = Timestamp.now()
                let removal = try Self.removeName(row, db, now: now)
                try ItemRow.touchFolders([parent], now: now, db)
                return removal
            }
        }
        settle(removal)
        if itemName.bytes == Self.ignoreFileName { ignoreRulesChanged(in: parent) }
        sync.localChange()
        thumbnails?.localChange(item.itemID)
        if let removedPath { emit(.deleted, victim.inode, path: removedPath) }
    }

    // MARK: Rename

    public func rename(parent: Inode, name: [UInt8], newParent: Inode, newName: [UInt8], exchange: Bool, noReplace: Bool) throws(FileSystemError) {
        let sourceName = ByteString(name)
        let targetName = try Self.checkName(newName)
        let (source, target, items) = try read { db in
            let (source, target) = (try ItemRow.child(of: parent, named: sourceName, db), try ItemRow.child(of: newParent, named: targetName, db))
            let items = try [source, target].compactMap { $0 }.compactMap { try ItemRow.resolved($0, db) }
            return (source, target, items)
        }
        guard let source else { throw FileSystemError(.notFound) }
        // Two names of one item: rename does nothing (POSIX), both names stay.
        if target != nil, items.count == 2, items[0].inode == items[1].inode { return }
        let fromPath = watchedPath(source.inode)
        let targetPath = target.flatMap { watchedPath($0.inode) }
        var leases: [(Inode, LeaseAccess)] = [(parent, .exclusive), (newParent, .exclusive), (source.inode, .exclusive)]
        if let target { leases.append((target.inode, .exclusive)) }
        for item in items where item.inode != source.inode && item.inode != target?.inode { leases.append((item.inode, .exclusive)) }
        var replaced: NameRemoval?
        try withLeases(leases, "rename") { () throws(FileSystemError) in
            replaced = try write { db -> NameRemoval? in
                guard var moving = try ItemRow.find(ino: source.inode, db), !moving.deleted, moving.parent == parent,
                      moving.itemName == sourceName else { throw FileSystemError(.notFound) }
                let newFolder = try Self.liveDirectory(newParent, db)
                let existing = try ItemRow.child(of: newParent, named: targetName, db)
                guard existing?.inode == target?.inode else { throw FileSystemError(.busy, "folder changed during rename") }
                let now = Timestamp.now()
                if moving.itemKind == .directory, newParent != parent, try ItemRow.isInside(newParent, moving.inode, db) {
                    throw FileSystemError(.invalid, "cannot move a folder into itself")
                }
                if exchange {
                    guard let other = existing else { throw FileSystemError(.notFound) }
                    try Self.exchange(moving, other, db, now: now)
                    try followIgnoreRules(moved: [(moving.inode, moving.isIgnored), (other.inode, other.isIgnored)], now: now, db)
                    return nil
                }
                // Into or out of an ignored place: the item starts or stops syncing first
                // (a safe save from an ignored temporary file then keeps the original's id).
                let wasIgnored = moving.isIgnored
                let marks = try ignoreMarks(of: targetName, isDirectory: moving.itemKind == .directory, in: newFolder, keeping: moving.ignoreMarks, db)
                let subtreeChecked = try setOwnIgnoreMarks(&moving, to: marks, .strict(.crossDevice), now: now, db)
                var victim: NameRemoval?
                if let existing {
                    if noReplace { throw FileSystemError(.exists) }
                    if existing.inode == moving.inode { return nil }
                    victim = try Self.replace(existing, by: &moving, db, now: now)
                }
                moving.parent = newParent
                moving.itemName = targetName
                moving.markChanged(.metadata, now: now)
                try moving.update(db)
                try ItemRow.touchFolders([parent, newParent], now: now, pushed: !(wasIgnored && moving.isIgnored), db)
                // A moved folder's items follow the rules of its new place (its own marks are set).
                if moving.itemKind == .directory {
                    ignores.forget()
                    if !(wasIgnored && moving.isIgnored) {
                        try reevaluateIgnores(under: moving, .strict(.crossDevice), checked: subtreeChecked, now: now, db)
                    }
                }
                return victim
            }
        }
        if let replaced { settle(replaced) }
        if sourceName.bytes == Self.ignoreFileName { ignoreRulesChanged(in: parent) }
        if targetName.bytes == Self.ignoreFileName { ignoreRulesChanged(in: newParent) }
        sync.localChange()
        thumbnails?.localChange(source.itemID)
        if let target { thumbnails?.localChange(target.itemID) }
        if let fromPath {
            if exchange, let target, let targetPath {
                emit(.moved, target.inode, from: targetPath)
            } else if let target, replaced != nil, let targetPath {
                emit(.deleted, target.inode, path: targetPath)
            }
            emit(.moved, source.inode, from: fromPath)
        }
        // Moved into a pinned folder: what is not local yet is downloaded.
        let downloads = self.downloads
        Task { await downloads.prefetchPinned(under: source.inode) }
    }

    /// renameat2's RENAME_EXCHANGE, through a name no one can have, so the unique index
    /// holds at every step.
    private static func exchange(_ first: ItemRow, _ second: ItemRow, _ db: Database, now: Int64) throws {
        var (moving, other) = (first, second)
        if other.inode == moving.inode { return }
        guard let parent = moving.parent, let newParent = other.parent else { throw FileSystemError(.notFound) }
        if other.itemKind == .directory, try ItemRow.isInside(parent, other.inode, db) {
            throw FileSystemError(.invalid, "cannot move a folder into itself")
        }
        let (sourceName, targetName) = (moving.itemName, other.itemName)
        other.itemName = ByteString(Array("\u{0}exchange".utf8))
        try other.update(db)
        moving.parent = newParent
        moving.itemName = targetName
        moving.markChanged(.metadata, now: now)
        try moving.update(db)
        other.parent = parent
        other.itemName = sourceName
        other.markChanged(.metadata, now: now)
        try other.update(db)
    }

    /// The name a rename replaces goes (`removeName`); a safe save (a new file renamed over
    /// the original, neither with other names) gives the new content the original's
    /// identity and history instead.
    private static func replace(_ replaced: ItemRow, by moving: inout ItemRow, _ db: Database, now: Int64) throws -> NameRemoval {
        var existing = replaced
        let existingKind = try ItemRow.resolved(existing, db)?.itemKind ?? existing.itemKind
        if moving.itemKind == .directory && existingKind != .directory { throw FileSystemError(.notDirectory) }
        if moving.itemKind != .directory && existingKind == .directory { throw FileSystemError(.isDirectory) }
        if existing.itemKind == .directory, try ItemRow.hasChildren(existing.inode, db) { throw FileSystemError(.notEmpty) }
        let movingIsNew = try moving.baseSeq == 0 && BaseSnapshots.find(moving.itemID, db) == nil
        let safeSave = moving.itemKind == .file && existing.itemKind == .file && movingIsNew
        guard try safeSave && ItemRow.nameCount(of: existing.itemID, db) == 1 && ItemRow.nameCount(of: moving.itemID, db) == 1 else {
            return try removeName(existing, db, now: now)
        }
        let keptID = existing.itemID
        existing.itemID = .random()
        existing.deleted = true
        existing.dirtyFlags = []
        try existing.update(db)
        moving.itemID = keptID
        moving.baseSeq = existing.baseSeq
        moving.blockList = existing.blockList
        if !moving.isIgnored { moving.dirtyFlags.insert(.content) }
        return .item(existing.inode)
    }

    // MARK: Symlinks

    public func readlink(_ ino: Inode) throws(FileSystemError) -> [UInt8] {
        let row = try row(ino)
        guard row.itemKind == .symlink, let target = row.symlinkTarget else { throw FileSystemError(.invalid) }
        return target.bytes
    }
}
