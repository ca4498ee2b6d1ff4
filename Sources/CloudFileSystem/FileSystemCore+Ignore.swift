import Foundation
import Glibc
import GRDB
import IgnoreRules
import Inodes
import ItemModel
import MetadataStore
import SyncEngine

/// Ignored items (docs/SEMANTICS.md, "Items that stay on this device"): what a name is
/// when it is made or moved, and the change of an item that starts or stops being ignored.
/// An item that becomes ignored gets a new id, and a deleted row keeps the old one, whose
/// delete is pushed; one that stops being ignored is pushed as new.
extension FileSystemCore {
    static let ignoreFileName = Array(IgnoreRules.fileName.utf8)

    /// At start: if this device's own list is not the one the last start had, the items
    /// already here follow it.
    public func applyDeviceIgnores() throws(FileSystemError) {
        let current = ignores.device.patterns.map(\.line).joined(separator: "\n")
        try write { db in
            guard try MetadataStore.setting(SettingKey.deviceIgnoreList, db) ?? "" != current,
                  let root = try ItemRow.find(ino: Inode.root, db) else { return }
            ignores.forget()
            try reevaluateIgnores(under: root, .lenient, now: Timestamp.now(), db)
            try MetadataStore.setSetting(SettingKey.deviceIgnoreList, current, db)
        }
        sync.localChange()
    }

    /// A `.ubiqfsignore` in `folder` was made, written, moved or removed: the rules are read
    /// again, and what is below the folder follows them.
    func ignoreRulesChanged(in folder: Inode) {
        ignores.forget()
        do {
            try write { db in
                guard let row = try ItemRow.find(ino: folder, db), !row.deleted, row.itemKind == .directory else { return }
                try reevaluateIgnores(under: row, .lenient, now: Timestamp.now(), db)
            }
            sync.localChange()
        } catch {
            logger.error("cannot apply the ignore rules changed in \(path(of: folder)): \(error)")
        }
    }

    /// `user.ubiqfs.ignored`: set, the item (and what is in it) stays on this device and
    /// leaves the container for the others; cleared, it syncs again unless a rule ignores it.
    public func setIgnored(_ ino: Inode, _ on: Bool) throws(FileSystemError) {
        guard ino != Inode.root else { throw FileSystemError(.notPermitted, "the top of the mount always syncs") }
        try withLeases([(ino, .exclusive)], "ignore") { () throws(FileSystemError) in
            try write { db in
                guard var row = try ItemRow.find(ino: ino, db), !row.deleted, let parent = row.parent,
                      let folder = try ItemRow.find(ino: parent, db) else { throw FileSystemError(.notFound) }
                var marks = try ignoreMarks(of: row.itemName, isDirectory: row.itemKind == .directory, in: folder, db)
                if on { marks.insert(.attribute) }
                try setIgnoreMarks(&row, to: marks, .strict(.busy), now: Timestamp.now(), db)
            }
        }
        sync.localChange()
        emit(.modified, ino, detail: "ignored")
    }

    /// A pull changed `.ubiqfsignore` names in `folders` or the content of rule `files`, or
    /// one was downloaded: rules whose file is here apply (to what is below their folder),
    /// the others are fetched first. Off the caller's thread (the sync engine's).
    func remoteRulesChanged(folders: [Inode], files: [Inode]) {
        ruleSweeps.async { [self] in
            do {
                let (ready, fetch) = try read { db -> (Set<Inode>, [Inode]) in
                    var ready: Set<Inode> = []
                    var fetch: [Inode] = []
                    var candidates = try files.compactMap { try ItemRow.find(ino: $0, db) }
                    for folder in folders {
                        if let file = try ItemRow.child(of: folder, named: ByteString(Self.ignoreFileName), db) { candidates.append(file) } else { ready.insert(folder) }
                    }
                    for file in candidates where !file.deleted && file.itemName.bytes == Self.ignoreFileName {
                        guard let parent = file.parent else { continue }
                        ignores.noteRuleFile(file.inode)
                        if file.contentState == .local { ready.insert(parent) } else { fetch.append(file.inode) }
                    }
                    return (ready, fetch)
                }
                downloads.prefetch(fetch)
                for folder in ready.sorted() { ignoreRulesChanged(in: folder) }
            } catch {
                logger.error("cannot apply the ignore rules another device changed: \(error)")
            }
        }
    }

    /// One item kept through a reset, back at its path (`KeptIgnoredItems`): missing folders
    /// on the way are made, ignored; a name taken meanwhile gives it a free one. An item
    /// already back (a restore cut short) is left as it is. `placed`: the folders put back
    /// so far by their kept paths (one that took a free name keeps what was in it).
    /// Returns the item's inode.
    @discardableResult
    func restoreIgnored(_ entry: KeptIgnoredItems.Entry, contentDirectory: String, placed: [[Data]: Inode] = [:]) throws -> Inode {
        guard let kind = ItemKind(rawValue: entry.kind), let last = entry.path.last else {
            throw FileSystemError(.invalid, "a kept item without a path or with an unknown kind \(entry.kind)")
        }
        let owner = Caller(uid: entry.uid, gid: entry.gid, pid: 0)
        var parent = Inode.root
        for (depth, component) in entry.path.dropLast().enumerated() {
            if let folder = placed[Array(entry.path[...depth])] {
                parent = folder
                continue
            }
            let name = ByteString(Array(component))
            if let existing = try read({ db in try ItemRow.child(of: parent, named: name, db) }), existing.itemKind == .directory {
                parent = existing.inode
                continue
            }
            let free = try read { db in try ItemRow.freeName(name, in: parent, db) }
            parent = try insertNew(parent: parent, name: free.bytes, kind: .directory, mode: 0o755, caller: owner, marks: .attribute).inode
        }
        let name = ByteString(Array(last))
        if let existing = try read({ db in try ItemRow.child(of: parent, named: name, db) }), existing.isIgnored, existing.itemKind == kind {
            return existing.inode
        }
        let free = try read { db in try ItemRow.freeName(name, in: parent, db) }
        let row = try insertNew(
            parent: parent, name: free.bytes, kind: kind, mode: entry.mode, caller: owner, target: entry.target.map { ByteString(Array($0)) },
            rdev: entry.rdev.map { UInt64(bitPattern: $0) }, marks: IgnoreMarks(rawValue: entry.marks)
        )
        guard kind == .file, let content = entry.content else { return row.inode }
        let source = contentDirectory + "/" + content
        try Syscall.check("rename") { Glibc.rename(source, cache.path(for: row.inode)) }
        cache.setModificationTime(row.inode, nanoseconds: entry.mtime)
        let size = cache.status(row.inode)?.size ?? 0
        try write { db in
            guard var restored = try ItemRow.find(ino: row.inode, db) else { return }
            (restored.size, restored.mtime) = (size, entry.mtime)
            try restored.update(db)
        }
        return row.inode
    }

    /// After the last writer of a file closed it: if it is a `.ubiqfsignore`, its rules apply.
    func noteIgnoreFileWritten(_ ino: Inode) {
        do {
            let row = try readUnisolated { db in try ItemRow.find(ino: ino, db) }
            if let row, !row.deleted, row.itemName.bytes == Self.ignoreFileName, let parent = row.parent { ignoreRulesChanged(in: parent) }
        } catch {
            logger.error("cannot tell whether inode \(ino) holds ignore rules: \(error)")
        }
    }

    /// How strict a change of ignore state is about items that cannot change.
    enum IgnoreChange {
        /// A rename, a link or the attribute: any item that cannot change fails the whole call.
        case strict(FileSystemErrorCode)
        /// A rule that changed: such an item keeps its state (and its placeholder is fetched).
        case lenient
    }

    /// The marks of an item named `name` in `folder`, keeping the item's own attribute mark.
    func ignoreMarks(of name: ByteString, isDirectory: Bool, in folder: ItemRow, keeping current: IgnoreMarks = [], _ db: Database) throws -> IgnoreMarks {
        var marks = current.intersection(.attribute)
        if try folder.isIgnored || ignores.reason(for: name, isDirectory: isDirectory, in: folder, db) != nil { marks.insert(.rule) }
        return marks
    }

    /// Gives `row` (a live item) `marks`, then its subtree what follows from them. With
    /// `.strict`, an item that cannot change throws (the caller's transaction is rolled
    /// back); with `.lenient` it keeps its state. `checked`: the subtree is known to be
    /// able to become ignored.
    func setIgnoreMarks(_ row: inout ItemRow, to marks: IgnoreMarks, _ change: IgnoreChange, checked: Bool = false, now: Int64, _ db: Database) throws {
        let subtreeChecked = try setOwnIgnoreMarks(&row, to: marks, change, checked: checked, now: now, db)
        if row.itemKind == .directory {
            try reevaluateIgnores(under: row, change, checked: subtreeChecked, now: now, db)
        }
    }

    /// `setIgnoreMarks` for the row alone (a rename moves it before its subtree follows).
    /// Returns whether its subtree is known to be able to become ignored.
    func setOwnIgnoreMarks(_ row: inout ItemRow, to marks: IgnoreMarks, _ change: IgnoreChange, checked: Bool = false, now: Int64, _ db: Database) throws -> Bool {
        let becomesIgnored = !row.isIgnored && !marks.isEmpty
        if row.isIgnored != !marks.isEmpty, !checked, let why = try blocker(row, becomingIgnored: becomesIgnored, db) {
            switch change {
            case .strict(let code): throw FileSystemError(code, "\(row.itemName) cannot \(becomesIgnored ? "be ignored" : "sync") here: \(why)")
            case .lenient: return false
            }
        }
        if row.ignoreMarks != marks { try Self.changeIgnoreState(&row, to: marks, now: now, db) }
        return checked || becomesIgnored
    }

    /// After an exchange: each moved item, and what is inside a moved folder, follows the
    /// rules of its new place, or the exchange fails with EXDEV.
    /// `moved`: each item and whether it was ignored before (a folder ignored before and
    /// after has nothing in it to change).
    func followIgnoreRules(moved: [(ino: Inode, wasIgnored: Bool)], now: Int64, _ db: Database) throws {
        for (ino, wasIgnored) in moved {
            guard var row = try ItemRow.find(ino: ino, db), let parent = row.parent, let folder = try ItemRow.find(ino: parent, db) else { continue }
            if row.itemKind == .directory { ignores.forget() }
            let marks = try ignoreMarks(of: row.itemName, isDirectory: row.itemKind == .directory, in: folder, keeping: row.ignoreMarks, db)
            let checked = try setOwnIgnoreMarks(&row, to: marks, .strict(.crossDevice), now: now, db)
            if row.itemKind == .directory && !(wasIgnored && row.isIgnored) {
                try reevaluateIgnores(under: row, .strict(.crossDevice), checked: checked, now: now, db)
            }
        }
    }

    /// Every item below `folder` given the marks its place calls for.
    func reevaluateIgnores(under folder: ItemRow, _ change: IgnoreChange, checked: Bool = false, now: Int64, _ db: Database) throws {
        var after = Inode(0)
        while true {
            let children = try ItemRow.children(of: folder.inode, after: after, limit: 1000, db)
            guard let last = children.last else { return }
            after = last.inode
            for var child in children {
                let marks = try ignoreMarks(of: child.itemName, isDirectory: child.itemKind == .directory, in: folder, keeping: child.ignoreMarks, db)
                try setIgnoreMarks(&child, to: marks, change, checked: checked, now: now, db)
            }
        }
    }

    /// Why the item cannot start (or stop) being ignored, if it cannot: an ignored item has
    /// no other copy, so its content must be here, and every name of it goes with it.
    private func blocker(_ row: ItemRow, becomingIgnored: Bool, _ db: Database) throws -> String? {
        func check(_ row: ItemRow) throws -> String? {
            if row.isLink { return "\(row.itemName) is another name of a file elsewhere" }
            guard row.itemKind == .file else { return nil }
            if try ItemRow.nameCount(of: row.itemID, db) > 1 { return "\(row.itemName) has other names that would not follow it" }
            if becomingIgnored && row.contentState != .local {
                return "the content of \(row.itemName) is not on this device yet (read it, or set user.ubiqfs.pinned, first)"
            }
            return nil
        }
        if let why = try check(row) { return why }
        guard becomingIgnored && row.itemKind == .directory else { return nil }
        for item in try ItemRow.descendants(of: row.inode, db) where !item.isIgnored {
            if let why = try check(item) { return why }
        }
        return nil
    }

    /// The row itself starts or stops being ignored (its subtree is the caller's).
    private static func changeIgnoreState(_ row: inout ItemRow, to marks: IgnoreMarks, now: Int64, _ db: Database) throws {
        let wasIgnored = row.isIgnored
        row.ignoreMarks = marks
        if wasIgnored == row.isIgnored {
            try row.update(db)
            return
        }
        if row.isIgnored {
            // Gone for the other devices (their trash keeps it): a deleted row with the
            // committed id carries the delete; this one goes on under an id never pushed.
            let base = try BaseSnapshots.find(row.itemID, db)
            let baseSeq = row.baseSeq
            row.itemID = .random()
            row.baseSeq = 0
            row.blockList = []
            row.dirtyFlags = []
            row.changeGen += 1
            row.ctime = now
            try row.update(db)
            if let base { try ItemRow.insertDeleteToPush(of: base, under: row.parent, baseSeq: baseSeq, db) }
        } else {
            // New to every device: its content too (an empty block list would commit an empty file).
            row.markChanged(row.itemKind == .file ? [.metadata, .content] : .metadata, now: now)
            try row.update(db)
        }
    }
}
