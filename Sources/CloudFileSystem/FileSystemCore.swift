import ContentCache
import FileCoordinator
import Foundation
import Glibc
import GRDB
import ItemModel
import Logging
import MetadataStore
import SyncEngine

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
        sync: SyncEngine, notifier: any InvalidationSink, controlSocketPath: String, logger: Logger
    ) {
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
        _ requests: [(Int64, LeaseAccess)], _ owner: String, _ body: () throws(FileSystemError) -> T
    ) throws(FileSystemError) -> T {
        let leases: LeaseSet
        do {
            leases = try coordinator.acquire(requests.map { LeaseRequest(UInt64($0.0), $0.1) }, owner: owner, timeout: .seconds(600))
        } catch {
            throw FileSystemError(.busy, "timed out waiting for a lease (\(owner))", cause: error)
        }
        defer { leases.release() }
        return try body()
    }

    /// A change for the watch API; paths are looked up only while someone watches.
    func emit(_ kind: ChangeEvent.Kind, _ ino: Int64, path: String? = nil, from: String? = nil, detail: String? = nil) {
        guard sync.feed.isWatched else { return }
        sync.feed.emit(ChangeEvent(kind, path: path ?? self.path(of: ino), from: from, origin: .local, detail: detail))
    }

    func watchedPath(_ ino: Int64) -> String? {
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
    /// disk it may spend the state disk's reserve: freeing space must work when it is needed.
    func write<T>(freeing: Bool = false, _ body: (Database) throws -> T) throws(FileSystemError) -> T {
        do {
            return try metadata.write(body)
        } catch where freeing && error.code == .diskFull && cache.reserve.release() {
            logger.warning("the state disk is full; spent the space reserve to let a delete through")
            do { return try metadata.write(body) } catch { throw Self.wrap(error) }
        } catch {
            throw Self.wrap(error)
        }
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

    func row(_ ino: Int64) throws(FileSystemError) -> ItemRow {
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

    static func liveDirectory(_ ino: Int64, _ db: Database) throws -> ItemRow {
        guard let row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
        guard row.itemKind == .directory else { throw FileSystemError(.notDirectory) }
        return row
    }

    // MARK: Attributes

    public func attributes(of row: ItemRow) throws(FileSystemError) -> ItemAttributes {
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
            }
        case .directory:
            let subfolders = try readUnisolated { db in try ItemRow.subfolderCount(row.inode, db) }
            nlink = UInt32(2 + subfolders)
            size = 4096
        case .symlink:
            size = Int64(row.symlinkTarget?.bytes.count ?? 0)
        case .fifo, .socket, .characterDevice, .blockDevice:
            size = 0
        }
        if row.deleted { nlink = 0 }
        return ItemAttributes(
            ino: row.inode, kind: row.itemKind, permissions: UInt32(row.mode), nlink: nlink,
            uid: UInt32(row.uid), gid: UInt32(row.gid), size: size, blocks: blocks,
            atime: row.atime, mtime: mtime, ctime: max(row.ctime, mtime),
            rdev: row.itemKind.isDevice ? UInt64(bitPattern: row.rdev ?? 0) : 0
        )
    }

    public func attributes(_ ino: Int64) throws(FileSystemError) -> ItemAttributes {
        try withLeases([(ino, .shared)], "getattr") { () throws(FileSystemError) in
            try attributes(of: row(ino))
        }
    }

    // MARK: Names

    public func lookup(parent: Int64, name: [UInt8]) throws(FileSystemError) -> ItemAttributes {
        if name.count > ItemName.maxLength { throw FileSystemError(.nameTooLong) }
        return try withLeases([(parent, .shared)], "lookup") { () throws(FileSystemError) in
            let child = try readUnisolated { db -> ItemRow? in
                _ = try Self.liveDirectory(parent, db)
                return try ItemRow.child(of: parent, named: ByteString(name), db)
            }
            guard let child else { throw FileSystemError(.notFound) }
            let attributes = try attributes(of: child)
            handles.addLookup(child.inode)
            return attributes
        }
    }

    public func forget(_ ino: Int64, count: UInt64) {
        if handles.forget(ino, count) { purge(ino) }
    }

    /// Drops an unlinked item's content once nothing uses it, and its row if its delete
    /// needs no push. The content goes even while the delete waits for the store (no push
    /// needs the bytes of a deleted file): `rm` frees disk space offline too.
    func purge(_ ino: Int64) {
        let unused: Bool
        do {
            unused = try write(freeing: true) { db in
                try ItemRow.purgeIfSettled(ino, db) || ItemRow.dropContentIfDeleted(ino, db)
            }
        } catch {
            // The row and its content stay; the reconciliation at the next start frees them.
            logger.error("cannot free deleted inode \(ino): \(error)")
            return
        }
        if unused {
            cache.remove(ino)
            // No change of this content is left to push: a write to the item after an edit
            // elsewhere brings it back must be marked for upload again.
            handles.contentDiscarded(ino)
            cache.reserve.restore()
        }
    }

    // MARK: Creating

    func insertNew(
        parent: Int64, name: [UInt8], kind: ItemKind, mode: UInt32, caller: Caller, target: ByteString? = nil, rdev: UInt64? = nil
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
                row.markChanged(kind == .file ? [.metadata, .content] : .metadata, now: now)
                try row.insert(db)
                try ItemRow.touchFolders([parent], now: now, db)
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
                _ = handles.noteWrite(created.inode)
            }
            created.contentState = .local
            handles.addLookup(created.inode)
            sync.localChange()
            emit(.created, created.inode)
            return created
        }
    }

    public func mkdir(parent: Int64, name: [UInt8], mode: UInt32, caller: Caller) throws(FileSystemError) -> ItemAttributes {
        try attributes(of: insertNew(parent: parent, name: name, kind: .directory, mode: mode, caller: caller))
    }

    public func symlink(parent: Int64, name: [UInt8], target: [UInt8], caller: Caller) throws(FileSystemError) -> ItemAttributes {
        guard !target.isEmpty else { throw FileSystemError(.notFound, "empty symlink target") }
        guard target.count <= RecordValidator.maxTargetLength else { throw FileSystemError(.nameTooLong) }
        return try attributes(of: insertNew(parent: parent, name: name, kind: .symlink, mode: 0o777, caller: caller, target: ByteString(target)))
    }

    public func mknod(parent: Int64, name: [UInt8], mode: UInt32, rdev: UInt64 = 0, caller: Caller) throws(FileSystemError) -> ItemAttributes {
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

    public func create(parent: Int64, name: [UInt8], mode: UInt32, flags: Int32, caller: Caller) throws(FileSystemError) -> (ItemAttributes, UInt64) {
        let row = try insertNew(parent: parent, name: name, kind: .file, mode: mode, caller: caller)
        // A new file is empty and local: it never waits for content.
        guard let opened = try openFile(row, flags: flags & ~O_TRUNC) else { throw FileSystemError(.io, "new file \(row.inode) is a placeholder") }
        return (try attributes(of: row), opened.handle)
    }

    // MARK: Removing

    public func unlink(parent: Int64, name: [UInt8], directory: Bool) throws(FileSystemError) {
        let itemName = ByteString(name)
        let victim = try readUnisolated { db in try ItemRow.child(of: parent, named: itemName, db) }
        guard let victim else { throw FileSystemError(.notFound) }
        let removedPath = watchedPath(victim.inode)
        try withLeases([(parent, .exclusive), (victim.inode, .exclusive)], "remove") { () throws(FileSystemError) in
            try write(freeing: true) { db in
                guard var row = try ItemRow.find(ino: victim.inode, db), !row.deleted, row.parent == parent, row.itemName == itemName else {
                    throw FileSystemError(.notFound)
                }
                if directory {
                    guard row.itemKind == .directory else { throw FileSystemError(.notDirectory) }
                    if try ItemRow.hasChildren(row.inode, db) { throw FileSystemError(.notEmpty) }
                } else if row.itemKind == .directory {
                    throw FileSystemError(.isDirectory)
                }
                let now = Timestamp.now()
                row.deleted = true
                row.markChanged(.metadata, now: now)
                try row.update(db)
                try ItemRow.touchFolders([parent], now: now, db)
            }
        }
        handles.markUnlinked(victim.inode)
        if !handles.isReferenced(victim.inode) { purge(victim.inode) }
        sync.localChange()
        if let removedPath { emit(.deleted, victim.inode, path: removedPath) }
    }

    // MARK: Rename

    public func rename(parent: Int64, name: [UInt8], newParent: Int64, newName: [UInt8], exchange: Bool, noReplace: Bool) throws(FileSystemError) {
        let sourceName = ByteString(name)
        let targetName = try Self.checkName(newName)
        let (source, target) = try read { db in
            (try ItemRow.child(of: parent, named: sourceName, db), try ItemRow.child(of: newParent, named: targetName, db))
        }
        guard let source else { throw FileSystemError(.notFound) }
        let fromPath = watchedPath(source.inode)
        let targetPath = target.flatMap { watchedPath($0.inode) }
        var leases: [(Int64, LeaseAccess)] = [(parent, .exclusive), (newParent, .exclusive), (source.inode, .exclusive)]
        if let target { leases.append((target.inode, .exclusive)) }
        var replaced: Int64?
        try withLeases(leases, "rename") { () throws(FileSystemError) in
            replaced = try write { db -> Int64? in
                guard var moving = try ItemRow.find(ino: source.inode, db), !moving.deleted, moving.parent == parent,
                      moving.itemName == sourceName else { throw FileSystemError(.notFound) }
                _ = try Self.liveDirectory(newParent, db)
                let existing = try ItemRow.child(of: newParent, named: targetName, db)
                guard existing?.inode == target?.inode else { throw FileSystemError(.busy, "folder changed during rename") }
                let now = Timestamp.now()
                if moving.itemKind == .directory, newParent != parent, try ItemRow.isInside(newParent, moving.inode, db) {
                    throw FileSystemError(.invalid, "cannot move a folder into itself")
                }
                if exchange {
                    guard var other = existing else { throw FileSystemError(.notFound) }
                    if other.inode == moving.inode { return nil }
                    if other.itemKind == .directory, try ItemRow.isInside(parent, other.inode, db) {
                        throw FileSystemError(.invalid, "cannot move a folder into itself")
                    }
                    // Through a name no one can have, so the unique index holds at every step.
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
                    return nil
                }
                var victim: Int64?
                if var existing {
                    if noReplace { throw FileSystemError(.exists) }
                    if existing.inode == moving.inode { return nil }
                    if moving.itemKind == .directory && existing.itemKind != .directory { throw FileSystemError(.notDirectory) }
                    if moving.itemKind != .directory && existing.itemKind == .directory { throw FileSystemError(.isDirectory) }
                    if existing.itemKind == .directory, try ItemRow.hasChildren(existing.inode, db) { throw FileSystemError(.notEmpty) }
                    let movingIsNew = try moving.baseSeq == 0 && BaseSnapshots.find(moving.itemID, db) == nil
                    if moving.itemKind == .file && existing.itemKind == .file && movingIsNew {
                        // A safe save (write a new file, rename it over the original): the new
                        // content continues the original item, so its identity and history stay.
                        let keptID = existing.id
                        existing.id = ItemID.random().rawValue
                        existing.deleted = true
                        existing.dirtyFlags = []
                        try existing.update(db)
                        moving.id = keptID
                        moving.baseSeq = existing.baseSeq
                        moving.blockList = existing.blockList
                        moving.dirtyFlags.insert(.content)
                    } else {
                        existing.deleted = true
                        existing.markChanged(.metadata, now: now)
                        try existing.update(db)
                    }
                    victim = existing.inode
                }
                moving.parent = newParent
                moving.itemName = targetName
                moving.markChanged(.metadata, now: now)
                try moving.update(db)
                try ItemRow.touchFolders([parent, newParent], now: now, db)
                return victim
            }
        }
        if let replaced {
            handles.markUnlinked(replaced)
            if !handles.isReferenced(replaced) { purge(replaced) }
        }
        sync.localChange()
        if let fromPath {
            if exchange, let target, let targetPath {
                emit(.moved, target.inode, from: targetPath)
            } else if let replaced, let targetPath {
                emit(.deleted, replaced, path: targetPath)
            }
            emit(.moved, source.inode, from: fromPath)
        }
        // Moved into a pinned folder: what is not local yet is downloaded.
        let downloads = self.downloads
        Task { await downloads.prefetchPinned(under: source.inode) }
    }

    // MARK: Symlinks

    public func readlink(_ ino: Int64) throws(FileSystemError) -> [UInt8] {
        let row = try row(ino)
        guard row.itemKind == .symlink, let target = row.symlinkTarget else { throw FileSystemError(.invalid) }
        return target.bytes
    }

    // MARK: Open files

    /// Opens a file. A placeholder opens once it can be read: for reading, as soon as its
    /// download has started (each read then waits for its own blocks); for writing, once
    /// its whole content is here. Downloads run outside any lease. The first attempt runs
    /// on the caller's thread (`FuseAdapter` starts the call with `Task.immediate` on a
    /// libfuse thread), so a local file opens with no hop; attempts after a wait run on
    /// `OffloadedWork`'s threads, as they may block on a lease.
    public func open(_ ino: Int64, flags: Int32) async throws(FileSystemError) -> OpenedFile {
        if let opened = try openLocal(ino, flags: flags) { return opened }
        if flags & O_ACCMODE == O_RDONLY { return try await openStreaming(ino) }
        // After three downloads whose result was replaced before the open, give up.
        for _ in 0..<3 {
            try await waitForContent(ino)
            if let opened = try await offloaded({ () throws(FileSystemError) in try self.openLocal(ino, flags: flags) }) { return opened }
        }
        throw FileSystemError(.io, "content of inode \(ino) keeps changing")
    }

    /// Opens a file whose content is local; nil for a placeholder that must be downloaded
    /// first (an empty one, or one opened with O_TRUNC, becomes an empty local file).
    private func openLocal(_ ino: Int64, flags: Int32) throws(FileSystemError) -> OpenedFile? {
        let truncate = flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY
        return try withLeases([(ino, truncate ? .exclusive : .shared)], "open") { () throws(FileSystemError) -> OpenedFile? in
            let row = try row(ino)
            guard !row.deleted else { throw FileSystemError(.notFound) }
            switch row.itemKind {
            case .directory: throw FileSystemError(.isDirectory)
            case .symlink: throw FileSystemError(.invalid)
            // The kernel serves these itself (and the mount is nodev); an open that reaches
            // the daemon is a device node's: no device behind it here.
            case .fifo, .socket, .characterDevice, .blockDevice: throw FileSystemError(.noDevice)
            case .file: break
            }
            guard let opened = try openFile(row, flags: flags) else { return nil }
            return OpenedFile(handle: opened.handle, keepCache: opened.keepCache, setID: row.mode & Int64(S_ISUID | S_ISGID) != 0)
        }
    }

    private func openFile(_ row: ItemRow, flags: Int32) throws(FileSystemError) -> (handle: UInt64, keepCache: Bool)? {
        let ino = row.inode
        let writable = flags & O_ACCMODE != O_RDONLY
        let truncate = flags & O_TRUNC != 0 && writable
        if row.contentState == .placeholder {
            // Nothing to download when the content is empty (now).
            guard truncate || row.size == 0 else { return nil }
            do { try cache.createEmpty(ino) } catch { throw Self.wrap(error) }
            try write { db in try ItemRow.setContentState(.local, of: ino, db) }
            if truncate && row.size > 0 { try noteContentChange(ino) }
        }
        let fd: Int32
        do { fd = try cache.open(ino, writable: writable) } catch { throw Self.wrap(error) }
        if truncate, let status = cache.status(fd: fd), status.size > 0 {
            guard ftruncate(fd, 0) == 0 else {
                let code = errno
                Glibc.close(fd)
                throw Self.localFailure(code, "truncate failed")
            }
            do { try noteContentChange(ino) } catch {
                Glibc.close(fd)
                throw error
            }
        }
        return handles.open(OpenFile(ino: ino, fd: fd, writable: writable, append: flags & O_APPEND != 0))
    }

    /// A placeholder opened for reading: the open returns as soon as the download has
    /// started, on the download's temporary file (the same inode the cache file will be).
    private func openStreaming(_ ino: Int64) async throws(FileSystemError) -> OpenedFile {
        let stream: (path: String, generation: UInt64)?
        do { stream = try await downloads.beginStreaming(ino) } catch { throw .waitingForContent(error) }
        return try await offloaded { () throws(FileSystemError) -> OpenedFile in
            let opened = try self.withLeases([(ino, .shared)], "open") { () throws(FileSystemError) -> (handle: UInt64, keepCache: Bool)? in
                if let stream {
                    let fd = Glibc.open(stream.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                    if fd >= 0 { return (self.handles.open(OpenFile(ino: ino, fd: fd, writable: false, append: false, stream: stream.generation)).handle, false) }
                    // Installed meanwhile (the temporary file became the cache file): open that.
                }
                return try self.openFile(self.row(ino), flags: O_RDONLY)
            }
            guard let opened else { throw FileSystemError(.io, "content of inode \(ino) keeps changing") }
            return OpenedFile(handle: opened.handle, keepCache: opened.keepCache, setID: false)
        }
    }

    /// Waits (outside any lease) until a placeholder's content is local; Ctrl-C stops
    /// waiting, the download goes on for others.
    private func waitForContent(_ ino: Int64) async throws(FileSystemError) {
        do { try await downloads.materialize(ino) } catch { throw .waitingForContent(error) }
    }

    /// Runs blocking work (leases, the cache, SQLite) off the cooperative pool.
    private func offloaded<T: Sendable>(_ work: @escaping @Sendable () throws(FileSystemError) -> T) async throws(FileSystemError) -> T {
        try await OffloadedWork.run(work)
    }

    /// Records a local content change: in memory always, in the database the first time
    /// since the item was clean.
    func noteContentChange(_ ino: Int64) throws(FileSystemError) {
        guard handles.noteWrite(ino) else { return }
        do {
            try metadata.write { db in
                guard var row = try ItemRow.find(ino: ino, db) else { return }
                row.contentState = .local
                row.markChanged(.content, now: Timestamp.now())
                try row.update(db)
            }
        } catch {
            handles.unmarkDirty(ino)
            throw Self.wrap(error)
        }
    }

    /// Reads from an open file. On a file still downloading, the read first waits for the
    /// blocks it covers (fetched before the others; Ctrl-C stops waiting); a failed
    /// download is never served as zeros.
    public func read(handle: UInt64, size: Int, offset: Int64) async throws(FileSystemError) -> [UInt8] {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        guard let generation = file.stream else { return try readNow(file, size: size, offset: offset) }
        switch downloads.transfers.rangeStatus(generation, offset: offset, length: size) {
        case .ready:
            return try readNow(file, size: size, offset: offset)
        case .failed(let failure):
            throw FileSystemError(failure.unreachable ? .unreachable : failure.noSpace ? .noSpace : .io, failure.reason)
        case .missing:
            do {
                try await downloads.waitForRange(file.ino, generation: generation, offset: offset, length: size)
            } catch {
                throw .waitingForContent(error)
            }
            return try await offloaded { () throws(FileSystemError) in try self.readNow(file, size: size, offset: offset) }
        }
    }

    private func readNow(_ file: OpenFile, size: Int, offset: Int64) throws(FileSystemError) -> [UInt8] {
        try withLeases([(file.ino, .shared)], "read") { () throws(FileSystemError) in
            do {
                return try Syscall.readFully(fd: file.fd, count: size, at: offset)
            } catch {
                throw FileSystemError(.io, "read failed", cause: error)
            }
        }
    }

    public func write(handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64) throws(FileSystemError) -> Int {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        guard file.writable else { throw FileSystemError(.badHandle) }
        return try withLeases([(file.ino, .exclusive)], "write") { () throws(FileSystemError) in
            var at = offset
            if file.append, let status = cache.status(fd: file.fd) { at = status.size }
            do throws(SystemError) {
                try Syscall.writeAll(fd: file.fd, data, at: at)
            } catch {
                throw Self.localFailure(error.errno, "write failed", cause: error)
            }
            try noteContentChange(file.ino)
            return data.count
        }
    }

    public func fsync(handle: UInt64) throws(FileSystemError) {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        guard Glibc.fsync(file.fd) == 0 else { throw Self.localFailure(errno, "fsync failed") }
        // The content is on disk; now the row that says it changed, with synchronous=FULL.
        do {
            try metadata.durableWrite { db in
                try ItemRow.rewrite(file.ino, db)
            }
        } catch {
            throw Self.wrap(error)
        }
        handles.noteFsync(file.ino)
        sync.localChange()
    }

    /// fsync on a folder: every namespace change so far (a rename after a safe save) is durable.
    public func fsyncDirectory(_ ino: Int64) throws(FileSystemError) {
        do {
            try metadata.durableWrite { db in
                try ItemRow.rewrite(ino, db)
            }
        } catch {
            throw Self.wrap(error)
        }
    }

    public func release(handle: UInt64) {
        guard let closed = handles.close(handle) else { return }
        if closed.lastWriter {
            sync.localChange()
            if sync.feed.isWatched, let row = try? row(closed.file.ino), row.dirtyFlags.contains(.content), !row.deleted {
                emit(.modified, row.inode)
            }
        }
        if closed.purge { purge(closed.file.ino) }
    }

    public func fallocate(handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws(FileSystemError) {
        guard let file = handles.file(handle), file.writable else { throw FileSystemError(.badHandle) }
        guard mode == 0 else { throw FileSystemError(.notSupported) }
        try withLeases([(file.ino, .exclusive)], "fallocate") { () throws(FileSystemError) in
            let result = posix_fallocate(file.fd, off_t(offset), off_t(length))
            guard result == 0 else { throw Self.localFailure(result, "fallocate failed") }
            try noteContentChange(file.ino)
        }
    }

    // MARK: setattr

    /// chmod, chown, utimes and truncate. Truncating a placeholder to a size other than 0
    /// waits for its content first (outside any lease), as a writable open does; like
    /// `open`, the first attempt runs on the caller's thread.
    public func setAttributes(_ ino: Int64, _ changes: AttributeChanges, handle: UInt64?) async throws(FileSystemError) -> ItemAttributes {
        if let updated = try setAttributesNow(ino, changes) { return updated }
        for _ in 0..<3 {
            try await waitForContent(ino)
            if let updated = try await offloaded({ () throws(FileSystemError) in try self.setAttributesNow(ino, changes) }) { return updated }
        }
        throw FileSystemError(.io, "content of inode \(ino) keeps changing")
    }

    /// The attributes after the change; nil (nothing changed) if a truncate needs the
    /// placeholder's content first.
    private func setAttributesNow(_ ino: Int64, _ changes: AttributeChanges) throws(FileSystemError) -> ItemAttributes? {
        var metadataChanged = false
        let updated = try withLeases([(ino, .exclusive)], "setattr") { () throws(FileSystemError) -> ItemAttributes? in
            var row = try row(ino)
            let now = Timestamp.now()
            if let size = changes.size {
                guard row.itemKind == .file else { throw FileSystemError(row.itemKind == .directory ? .isDirectory : .invalid) }
                guard size >= 0 else { throw FileSystemError(.invalid) }
                if row.contentState == .placeholder {
                    if size != 0 { return nil }
                    do { try cache.createEmpty(ino) } catch { throw Self.wrap(error) }
                    try write { db in
                        try ItemRow.setContentState(.local, of: ino, db)
                    }
                } else {
                    let result = Glibc.truncate(cache.path(for: ino), off_t(size))
                    guard result == 0 else { throw Self.localFailure(errno, "truncate failed") }
                }
                try noteContentChange(ino)
                row = try self.row(ino)
            }
            if let mode = changes.mode {
                row.mode = Int64(mode & 0o7777)
                metadataChanged = true
            }
            if let uid = changes.uid { row.uid = Int64(uid) }
            if let gid = changes.gid { row.gid = Int64(gid) }
            if changes.uid != nil || changes.gid != nil {
                // chown clears setuid/setgid, as on every Linux filesystem.
                if row.itemKind == .file { row.mode &= ~0o6000 }
                row.ctime = now
            }
            if let atime = changes.atime {
                switch atime {
                case .now: row.atime = now
                case .at(let value): row.atime = value
                }
                row.ctime = now
            }
            if let mtime = changes.mtime {
                let value: Int64 = switch mtime {
                case .now: now
                case .at(let value): value
                }
                row.mtime = value
                if row.contentState == .local && row.itemKind == .file { cache.setModificationTime(ino, nanoseconds: value) }
                metadataChanged = true
            }
            if metadataChanged { row.markChanged(.metadata, now: now) } else { row.ctime = now }
            let changed = row
            try write { db in
                guard var current = try ItemRow.find(ino: ino, db) else { throw FileSystemError(.notFound) }
                current.mode = changed.mode
                current.uid = changed.uid
                current.gid = changed.gid
                current.atime = changed.atime
                current.mtime = changed.mtime
                current.ctime = changed.ctime
                current.dirty |= changed.dirty
                current.changeGen = max(current.changeGen, changed.changeGen)
                try current.update(db)
            }
            if metadataChanged { sync.localChange() }
            return try attributes(of: self.row(ino))
        }
        guard let updated else { return nil }
        if changes.size != nil {
            emit(.modified, ino)
        } else if metadataChanged {
            emit(.modified, ino, detail: "metadata")
        }
        return updated
    }

    // MARK: Folders

    public func checkDirectory(_ ino: Int64) throws(FileSystemError) {
        _ = try read { db in try Self.liveDirectory(ino, db) }
    }

    /// Entries after `offset`: "." and ".." at offsets 1 and 2, then children in inode order
    /// with offset ino + 2, so offsets stay valid while the folder changes.
    public func list(_ ino: Int64, after offset: UInt64, limit: Int) throws(FileSystemError) -> [DirectoryListingEntry] {
        try withLeases([(ino, .shared)], "readdir") { () throws(FileSystemError) in
            let (folder, children) = try read { db -> (ItemRow, [ItemRow]) in
                let folder = try Self.liveDirectory(ino, db)
                let after = offset > 2 ? Int64(offset - 2) : 0
                return (folder, try ItemRow.children(of: ino, after: after, limit: limit, db))
            }
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
                entries.append(DirectoryListingEntry(name: child.itemName.bytes, attributes: try attributes(of: child), nextOffset: UInt64(child.inode) + 2))
            }
            return entries
        }
    }

    /// readdirplus hands the kernel a reference for each entry it keeps.
    public func noteListed(_ ino: Int64) {
        handles.addLookup(ino)
    }

    // MARK: Extended attributes

    public func getXattr(_ ino: Int64, name: [UInt8]) throws(FileSystemError) -> [UInt8] {
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
    private func statusXattr(_ ino: Int64, _ key: String) throws(FileSystemError) -> [UInt8] {
        let row = try row(ino)
        let transfer = downloads.transfers.transfer(ino)
        switch key {
        case "user.ubiqfs.control" where ino == ItemRow.rootIno: return Array(controlSocketPath.utf8)
        case "user.ubiqfs.id": return Array(row.id.utf8)
        case "user.ubiqfs.version": return Array(String(row.baseSeq).utf8)
        case "user.ubiqfs.pinned": return try read { db in try ItemRow.isPinned(ino, db) } ? [49] : [48]
        case "user.ubiqfs.state":
            let state = if let transfer {
                transfer.direction == .download ? "downloading" : "uploading"
            } else if downloads.transfers.error(ino) != nil {
                "error"
            } else if row.dirty != 0 {
                "pending"
            } else if row.itemKind == .file && row.contentState == .placeholder {
                "placeholder"
            } else {
                "local"
            }
            return Array(state.utf8)
        case "user.ubiqfs.progress":
            let percent = transfer?.percent ?? (row.itemKind == .file && row.contentState == .placeholder ? 0 : 100)
            return Array(String(percent).utf8)
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

    /// Pin (true), unpin (false) or inherit (nil). Pinning downloads what is not local yet.
    public func setPinned(_ ino: Int64, _ pinned: Bool?) throws(FileSystemError) {
        let toFetch = try withLeases([(ino, .exclusive)], "pin") { () throws(FileSystemError) -> [Int64] in
            try write { db -> [Int64] in
                guard var row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
                row.pinned = pinned
                row.ctime = Timestamp.now()
                try row.update(db)
                guard try ItemRow.isPinned(ino, db) else { return [] }
                let candidates = row.itemKind == .directory ? try ItemRow.descendants(of: ino, db) : [row]
                return try candidates.filter { item in
                    try item.itemKind == .file && item.contentState == .placeholder && ItemRow.isPinned(item.inode, db)
                }.map(\.inode)
            }
        }
        downloads.prefetch(toFetch)
    }

    /// Drops local content, keeping the item as a placeholder; a folder evicts everything
    /// under it that it can and reports the first refusal.
    public func evict(_ ino: Int64) throws(FileSystemError) {
        let row = try row(ino)
        guard row.itemKind == .directory else {
            try evictFile(ino)
            return
        }
        let files = try read { db in try ItemRow.descendants(of: ino, db).filter { $0.itemKind == .file }.map(\.inode) }
        var first: FileSystemError?
        for file in files {
            do { try evictFile(file) } catch { first = first ?? error }
        }
        if let first { throw first }
    }

    func evictFile(_ ino: Int64) throws(FileSystemError) {
        let evicted = try withLeases([(ino, .exclusive)], "evict") { () throws(FileSystemError) -> Bool in
            let evicted = try write(freeing: true) { db -> Bool in
                guard let row = try ItemRow.find(ino: ino, db), !row.deleted else { throw FileSystemError(.notFound) }
                guard row.itemKind == .file, row.contentState == .local else { return false }
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
                cache.remove(ino)
                cache.reserve.restore()
                notifier.invalidate([.inode(ino, data: true)])
            }
            return evicted
        }
        if evicted { emit(.evicted, ino) }
    }

    public func setXattr(_ ino: Int64, name: [UInt8], value: [UInt8], flags: Int32) throws(FileSystemError) {
        guard let key = Self.userXattrKey(name) else {
            throw FileSystemError(.notSupported, "only user.* extended attributes with UTF-8 names are stored")
        }
        switch key {
        case "user.ubiqfs.pinned":
            switch value {
            case [49], [49, 10]: return try setPinned(ino, true)
            case [48], [48, 10]: return try setPinned(ino, false)
            default: throw FileSystemError(.invalid, "user.ubiqfs.pinned takes 1 or 0")
            }
        case "user.ubiqfs.evict":
            return try evict(ino)
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

    public func listXattrs(_ ino: Int64) throws(FileSystemError) -> [UInt8] {
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

    public func removeXattr(_ ino: Int64, name: [UInt8]) throws(FileSystemError) {
        guard let key = Self.userXattrKey(name) else { throw Self.unstoredXattr(name) }
        if key == "user.ubiqfs.pinned" { return try setPinned(ino, nil) }
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

    // MARK: Filesystem

    public func statistics() -> (total: UInt64, free: UInt64, available: UInt64, blockSize: UInt64, files: UInt64) {
        var info = statvfs()
        statvfs(cache.directory, &info)
        let files = (try? metadata.read { db in try ItemRow.count(db) }) ?? 0
        return (UInt64(info.f_blocks), UInt64(info.f_bfree), UInt64(info.f_bavail), UInt64(info.f_frsize), UInt64(files))
    }

    /// The item's path inside the mount, for people (`ubiqfs locks`, logs).
    public func path(of ino: Int64) -> String {
        (try? metadata.read { db in try ItemRow.path(of: ino, db) }) ?? "(inode \(ino))"
    }

    /// Bytes of content on this disk (st_blocks of every cache file).
    public func cacheBytes() -> Int64 {
        cache.cachedInodes().reduce(0) { $0 + (cache.status($1)?.blocks ?? 0) * 512 }
    }
}
