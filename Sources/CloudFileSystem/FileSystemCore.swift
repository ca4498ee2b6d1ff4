import ContentCache
import FileCoordinator
import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import ThumbnailService
import Synchronization

/// The filesystem itself, without FUSE: every kernel operation as a Swift call that
/// takes its coordinator leases, reads and writes the metadata and the cache, and tells
/// the sync engine what changed. `FuseAdapter` is a thin layer over it.
///
/// Lock order (docs/ARCHITECTURE.md): coordinator leases (all of an operation's leases
/// in one call, ascending inode order) -> SQLite transaction -> in-memory Mutexes
/// (HandleTable, notifier queue), which are leaves. Kernel invalidations are queued,
/// never sent from here.
public final class FileSystemCore: Sendable {
    let metadata: MetadataStore
    let cache: ContentCache
    let coordinator: FileCoordinator
    let handles: HandleTable
    let sync: SyncEngine
    let downloads: Downloader
    let notifier: any InvalidationSink
    let logger: Logger
    /// Answered on the root as `user.ubiqfs.control`, so the CLI finds the daemon from a path.
    let controlSocketPath: String
    /// Set when the kernel drops cached pages that a direct write overwrites (FUSE 7.39,
    /// Linux 6.6): then files opened write-only are opened around the page cache.
    let writeOnlyDirect = Atomic<Bool>(false)
    /// Fetches ahead through a folder's small files opened one after another.
    let folderReadahead = FolderReadahead()
    /// This device's access times, by the mount's rule (`relatime`).
    let accessTimes: AccessTimes
    /// The ignore rules, as creates and moves need them.
    let ignores: IgnoreIndex
    /// Programs that only look, and what their opens fetch (`FileSystemCore+Looking`).
    let lookers: Lookers
    /// Pictures of files for viewers (nil: thumbnails are off).
    let thumbnails: ThumbnailService?
    /// Where the rules another device changed are applied, one change after another.
    let ruleSweeps = DispatchQueue(label: "ubiqfs-ignore-rules")

    public func openWriteOnlyDirect(_ on: Bool) {
        writeOnlyDirect.store(on, ordering: .relaxed)
    }

    /// The stored key for a name from the kernel: only `user.*` names that are valid UTF-8
    /// (keys of a JSON object) can exist; nil for any other, which no item holds.
    static func userXattrKey(_ name: [UInt8]) -> String? {
        guard let name = String(validating: name, as: UTF8.self), name.hasPrefix("user.") else { return nil }
        let key = ItemSnapshot.xattrName(name)
        return key.utf8.count <= 255 ? key : nil
    }

    /// Why a name `userXattrKey` refused is not there: a `user.*` name that is not UTF-8 is
    /// simply absent (ENODATA); other namespaces are not supported at all (EOPNOTSUPP), which
    /// `ls -l` and `cp -a` remember per filesystem, so they stop asking for `security.selinux`
    /// and ACLs on every file (two uncached round trips per entry otherwise).
    static func unstoredXattr(_ name: [UInt8]) -> FileSystemError {
        FileSystemError(name.starts(with: Array("user.".utf8)) ? .noAttribute : .notSupported)
    }

    public init(
        metadata: MetadataStore, cache: ContentCache, coordinator: FileCoordinator, handles: HandleTable,
        sync: SyncEngine, notifier: any InvalidationSink, controlSocketPath: String, logger: Logger,
        accessTimes: AccessTimes = AccessTimes(), ignores: IgnoreIndex, lookers: Lookers = .defaults, thumbnails: ThumbnailService? = nil
    ) {
        self.accessTimes = accessTimes
        self.lookers = lookers
        self.thumbnails = thumbnails
        self.ignores = ignores
        defer { ignores.listen { [weak self] folders, files in self?.remoteRulesChanged(folders: folders, files: files) } }
        self.notifier = notifier
        self.metadata = metadata
        self.cache = cache
        self.coordinator = coordinator
        self.handles = handles
        self.sync = sync
        self.downloads = sync.downloads
        self.controlSocketPath = controlSocketPath
        self.logger = logger
    }

    // MARK: Leases

    /// Owners are operation names only: the lease table's key already names the item, and a
    /// literal costs nothing on the read and write paths.
    func withLeases<T>(
        _ requests: [(Inode, LeaseAccess)], _ owner: String, _ body: () throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        let leases: LeaseSet
        do {
            leases = try coordinator.acquire(requests.map { LeaseRequest($0.0, $0.1) }, owner: owner, timeout: .seconds(600))
        } catch {
            throw FileSystemError(.busy, "timed out waiting for a lease (\(owner))", cause: error)
        }
        defer { leases.release() }
        return try body()
    }

    /// A change for the watch API; paths are looked up only while someone watches.
    func emit(_ kind: ChangeEvent.Kind, _ ino: Inode, path: String? = nil, from: String? = nil, detail: String? = nil) {
        guard sync.feed.isWatched else { return }
        sync.feed.emit(ChangeEvent(kind, path: path ?? self.path(of: ino), from: from, origin: .local, detail: detail))
    }

    func watchedPath(_ ino: Inode) -> String? {
        sync.feed.isWatched ? path(of: ino) : nil
    }

    func read<T>(_ body: (Database) throws -> T) throws(FileSystemError) -> T {
        do { return try metadata.read(body) } catch { throw Self.wrap(error) }
    }

    /// Statements without a common snapshot: for reads under a lease that keeps what they
    /// read from changing, or of one statement.
    func readUnisolated<T>(_ body: (Database) throws -> T) throws(FileSystemError) -> T {
        do { return try metadata.readUnisolated(body) } catch { throw Self.wrap(error) }
    }

    /// `freeing`: the change frees space (a delete, a truncate, an eviction), so on a full
    /// disk it may reuse the log's space and spend the state disk's reserve: freeing space
    /// must work when it is needed, also for deletes in a row that free nothing.
    func write<T>(freeing: Bool = false, _ body: (Database) throws -> T) throws(FileSystemError) -> T {
        do {
            guard freeing else { return try metadata.write(body) }
            return try metadata.write(makingRoom: spendReserve, body)
        } catch {
            throw Self.wrap(error)
        }
    }

    /// On a full state disk, what frees space (and a sync, which needs a log page) may
    /// spend the reserve kept for it.
    func spendReserve() -> Bool {
        guard cache.reserve.release() else { return false }
        logger.warning("the state disk is full; spent the space reserve to let a delete or a sync through")
        return true
    }

    static func wrap(_ error: any Error) -> FileSystemError {
        if let error = error as? FileSystemError { return error }
        if let error = error as? MetadataError {
            // An error thrown inside the transaction closure comes back wrapped.
            if let inner = error.cause as? FileSystemError { return inner }
            if error.code == .diskFull { return FileSystemError(.noSpace, error.message, cause: error) }
            if error.code == .constraint { return FileSystemError(.exists, error.message, cause: error) }
            return FileSystemError(.io, error.message, cause: error)
        }
        if let error = error as? CacheError {
            return FileSystemError(error.code == .diskFull ? .noSpace : .io, error.message, cause: error)
        }
        return FileSystemError(.io, "\(error)", cause: error)
    }

    /// A failed call on a cache file, as the program should see it: a full disk, a file
    /// past the disk's size limit (EFBIG), or an I/O error.
    static func localFailure(_ code: Int32, _ message: String, cause: (any Error)? = nil) -> FileSystemError {
        let kind: FileSystemErrorCode = switch code {
        case ENOSPC, EDQUOT: .noSpace
        case EFBIG: .fileTooLarge
        default: .io
        }
        return FileSystemError(kind, message + ": " + String(cString: strerror(code)), cause: cause)
    }

    func row(_ ino: Inode) throws(FileSystemError) -> ItemRow {
        guard let row = try readUnisolated({ db in try ItemRow.find(ino: ino, db) }) else {
            throw FileSystemError(.notFound, "no inode \(ino)")
        }
        return row
    }

    static func checkName(_ name: [UInt8]) throws(FileSystemError) -> ByteString {
        if name.count > ItemName.maxLength { throw FileSystemError(.nameTooLong) }
        let value = ByteString(name)
        guard ItemName.isValid(value) else { throw FileSystemError(.invalid, "invalid name") }
        return value
    }

    static func liveDirectory(_ ino: Inode, _ db: Database) throws -> ItemRow {
        guard let row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
        guard row.itemKind == .directory else { throw FileSystemError(.notDirectory) }
        return row
    }

    // MARK: Attributes

    public func attributes(of row: ItemRow) throws(FileSystemError) -> ItemAttributes {
        if row.isLink {
            guard let item = try readUnisolated({ db in try ItemRow.resolved(row, db) }) else { throw FileSystemError(.notFound, "a link to an item gone") }
            return try attributes(of: item)
        }
        var size = row.size
        var mtime = row.mtime
        var blocks: Int64 = 0
        var nlink: UInt32 = 1
        switch row.itemKind {
        case .file:
            if row.contentState == .local, let status = cache.status(row.inode) {
                size = status.size
                mtime = status.mtime
                blocks = status.blocks
            } else if row.contentState == .partial, let status = cache.status(row.inode) {
                // Size and times are the item's; the sparse file's blocks are what is here.
                blocks = status.blocks
            }
        case .directory:
            let subfolders = try readUnisolated { db in try ItemRow.subfolderCount(row.inode, db) }
            nlink = UInt32(2 + subfolders)
            size = 4096
        case .symlink:
            size = Int64(row.symlinkTarget?.bytes.count ?? 0)
        case .fifo, .socket, .characterDevice, .blockDevice:
            size = 0
        case .link:
            break
        }
        if row.itemKind != .directory && !row.deleted {
            nlink = UInt32(try readUnisolated { db in try ItemRow.nameCount(of: row.itemID, db) })
        }
        if row.deleted { nlink = 0 }
        return ItemAttributes(
            ino: row.inode, kind: row.itemKind, permissions: UInt32(row.mode), nlink: nlink,
            uid: UInt32(row.uid), gid: UInt32(row.gid), size: size, blocks: blocks,
            atime: accessTimes.current(row.inode, stored: row.atime), mtime: mtime, ctime: max(row.ctime, mtime),
            rdev: row.itemKind.isDevice ? UInt64(bitPattern: row.rdev ?? 0) : 0
        )
    }

    public func attributes(_ ino: Inode) throws(FileSystemError) -> ItemAttributes {
        try withLeases([(ino, .shared)], "getattr") { () throws(FileSystemError) in
            try attributes(of: row(ino))
        }
    }

    // MARK: Names

    public func lookup(parent: Inode, name: [UInt8]) throws(FileSystemError) -> ItemAttributes {
        if name.count > ItemName.maxLength { throw FileSystemError(.nameTooLong) }
        if name == [0x2E] || name == [0x2E, 0x2E] { return try lookupByHandle(parent, parentOf: name.count == 2) }
        return try withLeases([(parent, .shared)], "lookup") { () throws(FileSystemError) in
            let child = try readUnisolated { db -> ItemRow? in
                _ = try Self.liveDirectory(parent, db)
                return try ItemRow.resolvedChild(of: parent, named: ByteString(name), db)
            }
            guard let child else { throw FileSystemError(.notFound) }
            let attributes = try attributes(of: child)
            handles.addLookup(child.inode)
            return attributes
        }
    }

    /// "." and "..", which the kernel asks for only to resolve a file handle
    /// (`open_by_handle_at`, NFS export) of an inode it no longer holds: the item itself
    /// (even unlinked, while something still uses it), or its folder. An item gone is
    /// not found, which the kernel reports as a stale handle.
    private func lookupByHandle(_ ino: Inode, parentOf: Bool) throws(FileSystemError) -> ItemAttributes {
        try withLeases([(ino, .shared)], "lookup by handle") { () throws(FileSystemError) in
            let row = try readUnisolated { db -> ItemRow? in
                guard let row = try ItemRow.find(ino: ino, db) else { return nil }
                guard parentOf else { return row }
                // Not found (a stale handle) for a folder gone meanwhile.
                guard row.itemKind == .directory, !row.deleted else { return nil }
                return try ItemRow.find(ino: row.parent ?? Inode.root, db)
            }
            guard let row else { throw FileSystemError(.notFound) }
            let attributes = try attributes(of: row)
            // Counted last (what the kernel is given is what it will forget), and for an
            // unlinked item only if still in use: a purge in between would leave the kernel
            // an inode with no row.
            if row.deleted {
                guard handles.addLookupIfReferenced(row.inode) else { throw FileSystemError(.notFound) }
            } else {
                handles.addLookup(row.inode)
            }
            return attributes
        }
    }

    public func forget(_ ino: Inode, count: UInt64) {
        if handles.forget(ino, count) { purge(ino) }
    }

    /// Drops an unlinked item's content once nothing uses it, and its row if its delete
    /// needs no push. The content goes even while the delete waits for the store (no push
    /// needs the bytes of a deleted file): `rm` frees disk space offline too.
    func purge(_ ino: Inode) {
        let unused: Bool
        do {
            unused = try write(freeing: true) { [cache, metadata] db in
                let unused = try ItemRow.purgeIfSettled(ino, db) || ItemRow.dropContentIfDeleted(ino, db)
                // Queued inside the transaction: once it commits, a remote undelete and a
                // fill of this inode would come after, and cancel this removal. The mark
                // holds: no sync starts while this transaction has the writer.
                if unused { cache.removeOnceDurable(ino, mark: metadata.durabilityMark()) }
                return unused
            }
        } catch {
            // The row and its content stay; the reconciliation at the next start frees them.
            logger.error("cannot free deleted inode \(ino): \(error)")
            return
        }
        if unused {
            // No change of this content is left to push: a write to the item after an edit
            // elsewhere brings it back must be marked for upload again.
            handles.contentDiscarded(ino)
        }
    }

    // MARK: Access times

    /// An open for reading or a listing from the start: the access time moves by the
    /// mount's rule, and the kernel is told its cached one is stale.
    func noteAccess(_ row: ItemRow) {
        // A local file's own time is its cache file's, moved by every write.
        let mtime = row.itemKind == .file && row.contentState == .local ? cache.status(row.inode)?.mtime ?? row.mtime : row.mtime
        guard accessTimes.access(
            row.inode, atime: row.atime, mtime: mtime, ctime: max(row.ctime, mtime), folder: row.itemKind == .directory, now: Timestamp.now()
        ) else { return }
        notifier.invalidate([.inode(row.inode, data: false)])
        if accessTimes.isFull { flushAccessTimes() }
    }

    /// Writes the access times noted since the last batch (at a clean stop, every minute,
    /// and when a batch is full); kept for the next try if the write fails.
    public func flushAccessTimes() {
        let times = accessTimes.take()
        guard !times.isEmpty else { return }
        do {
            try write { db in try ItemRow.storeAccessTimes(times, db) }
        } catch {
            accessTimes.restore(times)
            logger.warning("cannot store \(times.count) access times: \(error)")
        }
    }

    // MARK: Folders

    public func checkDirectory(_ ino: Inode) throws(FileSystemError) {
        _ = try read { db in try Self.liveDirectory(ino, db) }
    }

    /// Entries after `offset`: "." and ".." at offsets 1 and 2, then children in inode order
    /// with offset ino + 2, so offsets stay valid while the folder changes.
    public func list(_ ino: Inode, after offset: UInt64, limit: Int) throws(FileSystemError) -> [DirectoryListingEntry] {
        try withLeases([(ino, .shared)], "readdir") { () throws(FileSystemError) in
            let (folder, children) = try read { db -> (ItemRow, [ItemRow]) in
                let folder = try Self.liveDirectory(ino, db)
                let after = offset > 2 ? Inode(offset - 2) : 0
                return (folder, try ItemRow.children(of: ino, after: after, limit: limit, db))
            }
            if offset == 0 { noteAccess(folder) }
            var entries: [DirectoryListingEntry] = []
            if offset < 1 {
                entries.append(DirectoryListingEntry(name: [46], attributes: try attributes(of: folder), nextOffset: 1))
            }
            if offset < 2 {
                let parentIno = folder.parent ?? ino
                let parentAttributes = parentIno == ino ? try attributes(of: folder) : try attributes(of: row(parentIno))
                entries.append(DirectoryListingEntry(name: [46, 46], attributes: parentAttributes, nextOffset: 2))
            }
            for child in children {
                entries.append(DirectoryListingEntry(name: child.itemName.bytes, attributes: try attributes(of: child), nextOffset: child.inode.rawValue + 2))
            }
            return entries
        }
    }

    /// readdirplus hands the kernel a reference for each entry it keeps.
    public func noteListed(_ ino: Inode) {
        handles.addLookup(ino)
    }

    // MARK: Filesystem

    public func statistics() -> (total: UInt64, free: UInt64, available: UInt64, blockSize: UInt64, files: UInt64) {
        var info = statvfs()
        statvfs(cache.directory, &info)
        let files = (try? metadata.read { db in try ItemRow.count(db) }) ?? 0
        return (UInt64(info.f_blocks), UInt64(info.f_bfree), UInt64(info.f_bavail), UInt64(info.f_frsize), UInt64(files))
    }

    /// The item's path inside the mount, for people (`ubiqfs locks`, logs).
    public func path(of ino: Inode) -> String {
        (try? metadata.read { db in try ItemRow.path(of: ino, db) }) ?? "(inode \(ino))"
    }

    /// Bytes of content on this disk (st_blocks of every cache file).
    public func cacheBytes() -> Int64 {
        cache.cachedInodes().reduce(0) { $0 + (cache.status($1)?.blocks ?? 0) * 512 }
    }
}
