import ContentCache
import FileCoordinator
import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import MetadataStore
import SyncEngine

/// Extended attributes: the user's own (`user.*`, synced with the item) and ubiqfs's
/// (`user.ubiqfs.*`: state, progress, error, conflicts, pin and evict).
extension FileSystemCore {
    // MARK: Extended attributes

    public func getXattr(_ ino: Inode, name: [UInt8]) throws(FileSystemError) -> [UInt8] {
        guard let key = Self.userXattrKey(name) else { throw Self.unstoredXattr(name) }
        if key.hasPrefix("user.ubiqfs.") { return try statusXattr(ino, key) }
        return try withLeases([(ino, .shared)], "getxattr") { () throws(FileSystemError) in
            guard let value = try readUnisolated({ db in try StoredXattrs.value(of: ino, named: key, db) }) else {
                throw FileSystemError(.noAttribute)
            }
            return Array(value)
        }
    }

    /// The `user.ubiqfs.*` names (docs/XATTRS.md): answered by name, never listed.
    private func statusXattr(_ ino: Inode, _ key: String) throws(FileSystemError) -> [UInt8] {
        let row = try row(ino)
        switch key {
        case "user.ubiqfs.control" where ino == Inode.root: return Array(controlSocketPath.utf8)
        case "user.ubiqfs.id": return Array(row.itemID.rawValue.utf8)
        case "user.ubiqfs.version": return Array(String(row.baseSeq).utf8)
        case "user.ubiqfs.pinned": return try read { db in try ItemRow.isPinned(ino, db) } ? [49] : [48]
        case "user.ubiqfs.ignored": return row.isIgnored ? [49] : [48]
        case "user.ubiqfs.state": return Array(state(of: row, transfer: downloads.transfers.transfer(ino)).utf8)
        case "user.ubiqfs.progress":
            return Array(String(progress(of: row, transfer: downloads.transfers.transfer(ino))).utf8)
        case "user.ubiqfs.error":
            guard let error = downloads.transfers.error(ino) else { throw FileSystemError(.noAttribute) }
            return Array(error.utf8)
        case "user.ubiqfs.conflicts":
            // Computed from the siblings, so it is the same on every device and a conflict
            // is resolved by deleting (or renaming) its copy.
            let copies = try read { db -> [ByteString] in
                guard let parent = row.parent else { return [] }
                let rows = try ItemRow.conflictCopyCandidates(in: parent, db)
                return rows.map(\.itemName).filter { ItemName.isConflictCopy($0, of: row.itemName) }
            }
            guard !copies.isEmpty else { throw FileSystemError(.noAttribute) }
            return copies.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) }.joined(separator: [10]).map { $0 }
        default: throw FileSystemError(.noAttribute)
        }
    }

    /// The word of `user.ubiqfs.state`: the first of ignored, downloading/uploading, error,
    /// pending, placeholder, partial, local that applies.
    func state(of row: ItemRow, transfer: TransferTable.Transfer?) -> String {
        if row.isIgnored { return "ignored" }
        if let transfer {
            return transfer.direction == .download ? "downloading" : "uploading"
        }
        if downloads.transfers.error(row.inode) != nil { return "error" }
        if !row.dirtyFlags.isEmpty { return "pending" }
        if row.itemKind == .file && row.contentState == .placeholder { return "placeholder" }
        if row.itemKind == .file && row.contentState == .partial { return "partial" }
        return "local"
    }

    /// `user.ubiqfs.progress`: the transfer's percent, or how much of the content is here.
    func progress(of row: ItemRow, transfer: TransferTable.Transfer?) -> Int {
        transfer?.percent ?? contentPercent(row)
    }

    /// How much of the item's content is here, when no transfer of it runs.
    private func contentPercent(_ row: ItemRow) -> Int {
        guard row.itemKind == .file else { return 100 }
        switch row.contentState {
        case .placeholder: return 0
        case .partial: return row.size > 0 ? Int(min(99, downloads.partials.presentBytes(of: row) * 100 / row.size)) : 0
        case .local: return 100
        }
    }

    /// Pin (true), unpin (false) or inherit (nil). Pinning downloads what is not local yet.
    /// `caller`: who asks (nil: this device); another user's state on a folder reaches only
    /// what they could change (`PinState`).
    public func setPinned(_ ino: Inode, _ pinned: Bool?, by caller: Caller? = nil) throws(FileSystemError) {
        let toFetch = try withLeases([(ino, .exclusive)], "pin") { () throws(FileSystemError) -> [Inode] in
            try write { db -> [Inode] in
                guard var row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
                row.pinned = pinned
                row.ctime = Timestamp.now()
                try row.update(db)
                try ItemRow.setPinSetter(ino, pinned == nil ? nil : caller?.pinSetter, db)
                guard try ItemRow.isPinned(ino, db) else { return [] }
                let candidates = row.itemKind == .directory ? try Self.itemsUnder(ino, db) : [row]
                return try candidates.filter { item in
                    try item.itemKind == .file && item.contentState != .local && ItemRow.isPinned(item.inode, db)
                }.map(\.inode)
            }
        }
        downloads.prefetch(toFetch)
    }

    /// Fetches in the background every block not here of the file, or of every file
    /// under the folder (`ubiqfs download`); returns at once.
    public func download(_ ino: Inode) throws(FileSystemError) {
        let toFetch = try read { db -> [Inode] in
            guard let row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
            let candidates = row.itemKind == .directory ? try Self.itemsUnder(ino, db) : [row]
            return candidates.filter { $0.itemKind == .file && $0.contentState != .local }.map(\.inode)
        }
        downloads.prefetch(toFetch)
    }

    /// Drops local content, keeping the item as a placeholder; a folder evicts everything
    /// under it that it can and reports the first refusal. On a shared mount a folder's
    /// evict reaches only the files `caller` could change (the kernel checks a file's own
    /// evict, and only the folder's): another user's private files keep their copy.
    public func evict(_ ino: Inode, by caller: Caller? = nil) throws(FileSystemError) {
        let row = try row(ino)
        guard row.itemKind == .directory else {
            try evictFile(ino)
            return
        }
        let files = try read { db in
            try Self.itemsUnder(ino, db).filter { $0.itemKind == .file && !$0.isIgnored && (caller?.mayChange($0) ?? true) }.map(\.inode)
        }
        var first: FileSystemError?
        for file in files {
            do { try evictFile(file) } catch { first = first ?? error }
        }
        if let first { throw first }
    }

    func evictFile(_ ino: Inode) throws(FileSystemError) {
        let evicted = try withLeases([(ino, .exclusive)], "evict") { () throws(FileSystemError) -> Bool in
            let evicted = try write(freeing: true) { db -> Bool in
                guard let row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
                guard row.itemKind == .file, row.contentState != .placeholder else { return false }
                if row.isIgnored {
                    throw FileSystemError(.notPermitted, "\(row.itemName) is ignored: it stays on this device, which has its only copy")
                }
                if try ItemRow.isPinned(ino, db) {
                    throw FileSystemError(.notPermitted, "\(row.itemName) is pinned; unpin it first")
                }
                if row.dirtyFlags.contains(.content) || row.baseSeq == 0 || handles.hasWriters(ino) || downloads.transfers.transfer(ino) != nil {
                    throw FileSystemError(.busy, "\(row.itemName) has changes not uploaded yet or is open for writing")
                }
                try ItemRow.makePlaceholder(ino, now: Timestamp.now(), db)
                return true
            }
            if evicted {
                // On disk before the content goes: a fill started later would otherwise
                // leave, after a power cut, a row saying "local" over its sparse file.
                do { try metadata.syncToDisk() } catch { throw Self.wrap(error) }
                cache.remove(ino)
                downloads.partials.forget(ino)
                cache.reserve.restore()
                notifier.invalidate([.inode(ino, data: true)])
            }
            return evicted
        }
        if evicted { emit(.evicted, ino) }
    }

    /// `caller`: who asks (nil: this device itself); a folder's evict and pin reach only
    /// what they could change themselves.
    public func setXattr(_ ino: Inode, name: [UInt8], value: [UInt8], flags: Int32, caller: Caller? = nil) throws(FileSystemError) {
        guard let key = Self.userXattrKey(name) else {
            throw FileSystemError(.notSupported, "only user.* extended attributes with UTF-8 names are stored")
        }
        switch key {
        case "user.ubiqfs.pinned":
            switch value {
            case [49], [49, 10]: return try setPinned(ino, true, by: caller)
            case [48], [48, 10]: return try setPinned(ino, false, by: caller)
            default: throw FileSystemError(.invalid, "user.ubiqfs.pinned takes 1 or 0")
            }
        case "user.ubiqfs.ignored":
            switch value {
            case [49], [49, 10]: return try setIgnored(ino, true)
            case [48], [48, 10]: return try setIgnored(ino, false)
            default: throw FileSystemError(.invalid, "user.ubiqfs.ignored takes 1 or 0")
            }
        case "user.ubiqfs.evict":
            return try evict(ino, by: caller)
        case "user.ubiqfs.download":
            return try download(ino)
        case _ where key.hasPrefix("user.ubiqfs."):
            throw FileSystemError(.notPermitted, "\(key) is read-only")
        default:
            break
        }
        guard value.count <= ItemSnapshot.maxXattrValue else { throw FileSystemError(.tooBig) }
        try withLeases([(ino, .exclusive)], "setxattr") { () throws(FileSystemError) in
            try write { db in
                guard var row = try ItemRow.find(ino: ino, db) else { throw FileSystemError(.notFound) }
                let existing = try StoredXattrs.value(of: ino, named: key, db)
                if flags & 1 != 0 && existing != nil { throw FileSystemError(.exists) }
                if flags & 2 != 0 && existing == nil { throw FileSystemError(.noAttribute) }
                let replaced = existing.map { key.utf8.count + $0.count } ?? 0
                let total = try StoredXattrs.totalSize(of: ino, db) - replaced + key.utf8.count + value.count
                guard total <= ItemSnapshot.maxXattrTotal else {
                    throw FileSystemError(.noSpace, "extended attributes of \(row.itemName) would take \(total) bytes; the limit is \(ItemSnapshot.maxXattrTotal)")
                }
                try StoredXattrs.set(ino, name: key, value: Data(value), db)
                row.markChanged(.metadata, now: Timestamp.now())
                try row.update(db)
            }
        }
        sync.localChange()
        emit(.modified, ino, detail: "metadata")
    }

    public func listXattrs(_ ino: Inode) throws(FileSystemError) -> [UInt8] {
        let names = try read { db -> [String] in
            guard try ItemRow.find(ino: ino, db) != nil else { throw FileSystemError(.notFound, "no inode \(ino)") }
            return try StoredXattrs.names(of: ino, db)
        }
        var bytes: [UInt8] = []
        for name in names {
            bytes += Array(name.utf8)
            bytes.append(0)
        }
        return bytes
    }

    public func removeXattr(_ ino: Inode, name: [UInt8]) throws(FileSystemError) {
        guard let key = Self.userXattrKey(name) else { throw Self.unstoredXattr(name) }
        if key == "user.ubiqfs.pinned" { return try setPinned(ino, nil) }
        if key == "user.ubiqfs.ignored" { return try setIgnored(ino, false) }
        if key.hasPrefix("user.ubiqfs.") { throw FileSystemError(.notPermitted, "\(key) is read-only") }
        try withLeases([(ino, .exclusive)], "removexattr") { () throws(FileSystemError) in
            try write { db in
                guard var row = try ItemRow.find(ino: ino, db) else { throw FileSystemError(.notFound) }
                guard try StoredXattrs.remove(ino, name: key, db) else { throw FileSystemError(.noAttribute) }
                row.markChanged(.metadata, now: Timestamp.now())
                try row.update(db)
            }
        }
        sync.localChange()
        emit(.modified, ino, detail: "metadata")
    }

    /// Every live item under a folder, a linked one once for all its names there: pin,
    /// evict and download act on the item a link in the folder names.
    static func itemsUnder(_ folder: Inode, _ db: Database) throws -> [ItemRow] {
        var seen: Set<Inode> = []
        return try ItemRow.descendants(of: folder, db).compactMap { try ItemRow.resolved($0, db) }.filter { seen.insert($0.inode).inserted }
    }
}
