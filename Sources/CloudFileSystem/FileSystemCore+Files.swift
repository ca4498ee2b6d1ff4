import ContentCache
import FileCoordinator
import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Synchronization

/// Open files: opening (a placeholder waits for its content), reading, writing, fsync,
/// release, fallocate and setattr.
extension FileSystemCore {
    // MARK: Open files

    /// Opens a file. A placeholder or partial file opens at once and fetches nothing: each
    /// read fetches the blocks it needs (`read`), and the first write the rest
    /// (`fetchContentForWrite`). The first attempt runs on the caller's thread
    /// (`FuseAdapter` starts the call with `Task.immediate` on a libfuse thread), so a file
    /// opens with no hop; an attempt after a download (should an open need one) runs on
    /// `OffloadedWork`'s threads, as it may block on a lease.
    /// `caller`: who opens; a program that only looks (`Lookers`) reads only what it reads.
    public func open(_ ino: Inode, flags: Int32, caller: Caller? = nil) async throws(FileSystemError) -> OpenedFile {
        if flags & O_ACCMODE == O_RDONLY, let pid = caller?.pid, let kind = lookers.kind(of: pid) {
            return try await openLooking(ino, flags: flags, as: kind)
        }
        if let opened = try openLocal(ino, flags: flags) { return opened }
        // After three downloads whose result was replaced before the open, give up.
        for _ in 0..<3 {
            try await waitForContent(ino)
            if let opened = try await offloaded({ () throws(FileSystemError) in try self.openLocal(ino, flags: flags) }) { return opened }
        }
        throw FileSystemError(.io, "content of inode \(ino) keeps changing")
    }

    /// Opens a file: local, or a placeholder or partial file on its fill (an empty one, or
    /// one opened with O_TRUNC, becomes an empty local file); nil if its content must be
    /// downloaded first.
    func openLocal(_ ino: Inode, flags: Int32, looking: Lookers.Kind? = nil) throws(FileSystemError) -> OpenedFile? {
        let truncate = flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY
        return try withLeases([(ino, truncate ? .exclusive : .shared)], "open") { () throws(FileSystemError) -> OpenedFile? in
            let row = try row(ino)
            // An unlinked file that something still uses opens again (/proc/PID/fd/N, a
            // file handle), as on any Linux filesystem: its content stays until then.
            // (Not one another device deleted: its content went with the delete.)
            guard !row.deleted || (row.contentState == .local && handles.isReferenced(ino) && cache.status(ino) != nil) else {
                throw FileSystemError(.notFound)
            }
            switch row.itemKind {
            case .directory: throw FileSystemError(.isDirectory)
            case .symlink: throw FileSystemError(.invalid)
            // The kernel serves these itself (and the mount is nodev); an open that reaches
            // the daemon is a device node's: no device behind it here.
            case .fifo, .socket, .characterDevice, .blockDevice: throw FileSystemError(.noDevice)
            // A link's row is never an inode the kernel has.
            case .link: throw FileSystemError(.notFound)
            case .file: break
            }
            guard let opened = try openFile(row, flags: flags, looking: looking) else { return nil }
            // A look is no use: the cache budget keeps what programs use, and a crawl is
            // no run of opens through a folder.
            if looking != nil { return OpenedFile(handle: opened.handle, keepCache: opened.keepCache, directIO: isDirect(handle: opened.handle)) }
            if flags & O_ACCMODE != O_WRONLY { noteAccess(row) }
            if flags & O_ACCMODE == O_RDONLY, row.size > 0, row.size <= FolderReadahead.smallFile, let parent = row.parent {
                readAheadInFolder(parent, local: row.contentState == .local)
            }
            return OpenedFile(handle: opened.handle, keepCache: opened.keepCache, directIO: isDirect(handle: opened.handle))
        }
    }

    /// `created`: the file was just made for this open (its creation is the writer's).
    func openFile(
        _ row: ItemRow, flags: Int32, created: Bool = false, looking: Lookers.Kind? = nil
    ) throws(FileSystemError) -> (handle: UInt64, keepCache: Bool)? {
        let ino = row.inode
        let writable = flags & O_ACCMODE != O_RDONLY
        let truncate = flags & O_TRUNC != 0 && writable
        var wrote = created
        if row.contentState != .local {
            if !truncate && row.size > 0 { return try openPartial(row, flags: flags, looking: looking) }
            // Nothing to download when the content is empty (now): a new empty file, so
            // readers of a partial version keep theirs.
            wrote = truncate && row.size > 0
            try makeEmptyLocal(ino, changed: wrote)
        }
        let fd: Int32
        do { fd = try cache.open(ino, writable: writable) } catch { throw Self.wrap(error) }
        if truncate, let status = cache.status(fd: fd), status.size > 0 {
            do { try noteContentChange(ino, .truncated(0)) } catch {
                Glibc.close(fd)
                throw error
            }
            guard ftruncate(fd, 0) == 0 else {
                let code = errno
                Glibc.close(fd)
                throw Self.localFailure(code, "truncate failed")
            }
            wrote = true
        }
        // Write-only opens go around the page cache where the kernel drops what such a
        // write overwrites; not a setuid or setgid file, whose bits the kernel clears on a
        // write by another user only on the cached path.
        let directIO = flags & O_ACCMODE == O_WRONLY && row.mode & 0o6000 == 0 && writeOnlyDirect.load(ordering: .relaxed)
        let bypasses = directIO || (writable && flags & OpenFlags.direct != 0)
        let file = OpenFile(
            ino: ino, fd: fd, writable: writable, append: flags & O_APPEND != 0, directIO: directIO,
            bypassesPageCache: bypasses, syncsWrites: bypasses && flags & O_DSYNC != 0
        )
        return handles.open(file, wroteOnOpen: wrote && writable, created: created)
    }

    /// A placeholder or partial file opened without O_TRUNC: on its fill's cache file,
    /// which each read fills as it goes. Opened for writing, it fetches nothing either
    /// (`touch`); its first write, or fallocate, fetches the rest first
    /// (`fetchContentForWrite`).
    private func openPartial(_ row: ItemRow, flags: Int32, looking: Lookers.Kind? = nil) throws(FileSystemError) -> (handle: UInt64, keepCache: Bool)? {
        let partial: PartialContent?
        do { partial = try downloads.partials.fill(for: row) } catch { throw .waitingForContent(error) }
        guard let partial else { return nil }
        let writable = flags & O_ACCMODE != O_RDONLY
        // The fill's own file, never the cache path again: a fill started meanwhile would
        // put another file there, whose blocks this handle's fill does not track.
        let fd = dup(partial.fd)
        guard fd >= 0 else { throw Self.localFailure(errno, "cannot open inode \(row.inode)") }
        // A look reads around the page cache: a read cut at `readLimit` is no end of file
        // there (the kernel would take the file's size for it).
        let directIO = looking != nil || (flags & O_ACCMODE == O_WRONLY && row.mode & 0o6000 == 0 && writeOnlyDirect.load(ordering: .relaxed))
        let bypasses = directIO || (writable && flags & OpenFlags.direct != 0)
        let file = OpenFile(
            ino: row.inode, fd: fd, writable: writable, append: flags & O_APPEND != 0, directIO: directIO,
            bypassesPageCache: bypasses, syncsWrites: bypasses && flags & O_DSYNC != 0, partial: partial,
            readahead: looking == nil ? Readahead(pageCached: flags & OpenFlags.direct == 0) : nil,
            readLimit: looking == nil ? nil : lookers.readLimit
        )
        return handles.open(file, wroteOnOpen: false, created: false)
    }

    /// The next small placeholders of the folder, fetched many at once in the background
    /// when `FolderReadahead` sees a run of opens through it.
    private func readAheadInFolder(_ parent: Inode, local: Bool) {
        guard let want = folderReadahead.noteOpen(parent: parent, local: local) else { return }
        let (metadata, downloads, readahead, logger) = (metadata, downloads, folderReadahead, logger)
        Task {
            do {
                let next = try await metadata.read { db in
                    try ItemRow.smallPlaceholders(in: parent, after: want.after, maxSize: FolderReadahead.smallFile, limit: want.count, db)
                }
                readahead.noteFetched(parent: parent, from: want.after, through: next.last?.name, short: want.count - next.count)
                downloads.prefetch(next.map(\.ino))
            } catch {
                logger.warning("cannot read ahead in folder \(parent): \(error)")
            }
        }
    }

    /// A write that fetches the rest of a placeholder opened for writing first, if needed.
    /// The write itself runs off the cooperative pool: the first write to the file just
    /// fetched (committed content) waits for a database sync.
    public func write(handle: UInt64, bytes: [UInt8], offset: Int64) async throws(FileSystemError) -> Int {
        if needsContentBeforeWrite(handle: handle) { try await fetchContentForWrite(handle: handle) }
        return try await offloaded { () throws(FileSystemError) -> Int in
            let written = bytes.withUnsafeBytes { data in
                Result { () throws(FileSystemError) in try self.write(handle: handle, data: data, offset: offset) }
            }
            return try written.get()
        }
    }

    /// fallocate with a fetch first if needed (as `write`), off the cooperative pool.
    public func fallocateFetching(handle: UInt64, mode: Int32, offset: Int64, length: Int64, caller: Caller) async throws(FileSystemError) {
        if needsContentBeforeWrite(handle: handle) { try await fetchContentForWrite(handle: handle) }
        try await offloaded { () throws(FileSystemError) in
            try self.fallocate(handle: handle, mode: mode, offset: offset, length: length, caller: caller)
        }
    }

    /// Whether a write or fallocate on this handle must first make the file local
    /// (`fetchContentForWrite`): it was opened on a fill, which may still miss blocks or
    /// wait for the last ones to be made durable.
    public func needsContentBeforeWrite(handle: UInt64) -> Bool {
        guard let file = handles.file(handle), file.writable else { return false }
        return file.partial != nil
    }

    /// Fetches every block of the handle's file not here yet and waits until the file is
    /// local and durable, so it can be written. The fill completes in place, so the
    /// handle's descriptor stays the file's: nothing evicts or replaces a file open for
    /// writing, but for a truncate to 0 or an O_TRUNC open by another program, which makes
    /// a new cache file. This handle has written nothing yet, so it then follows to that
    /// file (`dup2` onto its descriptor), as it would see a truncate on any filesystem.
    public func fetchContentForWrite(handle: UInt64) async throws(FileSystemError) {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        try await waitForContent(file.ino)
        try await offloaded { () throws(FileSystemError) in
            try self.withLeases([(file.ino, .exclusive)], "write") { () throws(FileSystemError) in
                guard try self.row(file.ino).contentState == .local else {
                    throw FileSystemError(.io, "content of inode \(file.ino) changed while open")
                }
                var opened = stat(), current = stat()
                if fstat(file.fd, &opened) == 0, lstat(self.cache.path(for: file.ino), &current) == 0, opened.st_ino != current.st_ino {
                    let fd: Int32
                    do { fd = try self.cache.open(file.ino, writable: true) } catch { throw Self.wrap(error) }
                    defer { Glibc.close(fd) }
                    guard dup2(fd, file.fd) >= 0 else { throw Self.localFailure(errno, "cannot reopen inode \(file.ino)") }
                }
                self.handles.contentComplete(handle)
            }
        }
    }

    /// A placeholder or partial file becomes an empty local file (O_TRUNC, truncate);
    /// `changed`: its committed content was not empty, so the empty file is a change. So
    /// that no power cut leaves a row claiming bytes the new file lacks, a partial file is
    /// made a placeholder on disk first (its fill's record goes), and the row says local
    /// (and changed, in the same transaction) only once the empty file is there.
    func makeEmptyLocal(_ ino: Inode, changed: Bool) throws(FileSystemError) {
        let before = try row(ino)
        if before.contentState == .partial { try forgetFillDurably(ino) }
        cache.remove(ino)
        downloads.partials.forget(ino)
        // An empty file opened is no change: it keeps the time every device shows.
        do { try cache.createEmpty(ino, mtime: changed ? nil : before.mtime) } catch { throw Self.wrap(error) }
        if changed { _ = handles.noteWrite(ino, .truncated(0)) }
        do {
            try write { db in
                guard var row = try ItemRow.find(ino: ino, db) else { return }
                row.contentState = .local
                if changed { row.markChanged(.content, now: Timestamp.now()) }
                try row.update(db)
            }
        } catch {
            // Said again by the next write, as `noteContentChange` does.
            if changed { handles.unmarkDirty(ino) }
            throw error
        }
    }

    /// A partial file becomes a placeholder on disk (its fill's record goes with it), before
    /// other bytes take its cache file's place: no power cut may leave that record
    /// describing them.
    func forgetFillDurably(_ ino: Inode) throws(FileSystemError) {
        try write { db in try ItemRow.setContentState(.placeholder, of: ino, db) }
        try syncState()
        downloads.partials.forget(ino)
    }

    /// Waits (outside any lease) until a placeholder's content is local; Ctrl-C stops
    /// waiting, the download goes on for others.
    private func waitForContent(_ ino: Inode) async throws(FileSystemError) {
        do { try await downloads.materialize(ino) } catch { throw .waitingForContent(error) }
    }

    /// Runs blocking work (leases, the cache, SQLite) off the cooperative pool.
    private func offloaded<T: Sendable>(_ work: @escaping @Sendable () throws(FileSystemError) -> T) async throws(FileSystemError) -> T {
        try await OffloadedWork.run(work)
    }

    /// Records a local content change before it is made: in memory always, in the database
    /// the first time since the item was clean. When the file held committed content, that
    /// mark is on disk before the change reaches the cache file: otherwise a power cut could
    /// keep the new bytes and lose the mark, and the change would never be uploaded.
    func noteContentChange(_ ino: Inode, _ change: ContentChange) throws(FileSystemError) {
        guard handles.noteWrite(ino, change) else { return }
        do {
            let heldCommittedContent = try metadata.write { db -> Bool in
                guard var row = try ItemRow.find(ino: ino, db) else { return false }
                // An ignored file's content is its only copy, never committed: nothing to keep apart.
                let committed = row.contentState == .local && !row.dirtyFlags.contains(.content) && !row.isIgnored
                row.contentState = .local
                row.markChanged(.content, now: Timestamp.now())
                try row.update(db)
                return committed
            }
            if heldCommittedContent { try metadata.syncToDisk() }
        } catch {
            handles.unmarkDirty(ino)
            throw Self.wrap(error)
        }
    }

    /// Reads from an open file. On a partial file, the read first fetches the blocks it
    /// covers that are not here (Ctrl-C stops waiting) and starts its readahead; a block
    /// that cannot be fetched fails this read, never served as zeros, and is tried again
    /// by the next.
    public func read(handle: UInt64, size: Int, offset: Int64) async throws(FileSystemError) -> [UInt8] {
        let bytes = Mutex<[UInt8]?>(nil)
        try await read(handle: handle, size: size, offset: offset) { fd, offset, count throws(FileSystemError) in
            do {
                let read = try Syscall.readFully(fd: fd, count: count, at: offset)
                bytes.withLock { $0 = read }
            } catch {
                throw FileSystemError(.io, "read failed", cause: error)
            }
        }
        guard let read = bytes.withLock({ $0 }) else { throw FileSystemError(.io, "read of handle \(handle) answered nothing") }
        return read
    }

    /// The same read, handed to `reply` as a range of the cache file (descriptor, offset,
    /// count; fewer bytes are there at its end), valid only during the call, while the
    /// item's shared lease keeps it from changing: the kernel's read is answered from it
    /// without copying it through here.
    public func read(handle: UInt64, size: Int, offset: Int64,
                     reply: @escaping @Sendable (Int32, Int64, Int) throws(FileSystemError) -> Void) async throws(FileSystemError) {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        var wanted = size
        if let limit = file.readLimit {
            guard offset < limit else { return try reply(file.fd, offset, 0) }
            wanted = Int(min(Int64(size), limit - offset))
        }
        let size = wanted
        guard let partial = file.partial else { return try readNow(file, size: size, offset: offset, reply) }
        if let readahead = file.readahead {
            readAhead(readahead.blocks(after: offset, length: size, in: partial), readahead, partial)
        }
        let needed = partial.missing(offset: offset, length: size)
        guard !needed.isEmpty else { return try readNow(file, size: size, offset: offset, reply) }
        do { try await downloads.read(partial, blocks: needed) } catch { throw .waitingForContent(error) }
        try await offloaded { () throws(FileSystemError) in try self.readNow(file, size: size, offset: offset, reply) }
    }

    /// Fetches a batch ahead of a reader, and the next ones as its blocks arrive, while the
    /// readahead's window has room: each block that arrives makes room for as many bytes.
    private func readAhead(_ batch: Readahead.Batch, _ readahead: Readahead, _ partial: PartialContent) {
        guard !batch.isEmpty else { return }
        let downloads = self.downloads
        Task {
            await downloads.readAhead(partial, blocks: batch.blocks) { index, fetched in
                let block = Readahead.Batch(blocks: [index], bytes: partial.blocks[index].length)
                self.readAhead(readahead.arrived(block, fetched: fetched, in: partial), readahead, partial)
            }
        }
    }

    private func readNow(_ file: OpenFile, size: Int, offset: Int64, _ reply: (Int32, Int64, Int) throws(FileSystemError) -> Void) throws(FileSystemError) {
        try withLeases([(file.ino, .shared)], "read") { () throws(FileSystemError) in try reply(file.fd, offset, size) }
    }

    public func write(handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64) throws(FileSystemError) -> Int {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        guard file.writable else { throw FileSystemError(.badHandle) }
        guard file.partial == nil else { throw FileSystemError(.io, "inode \(file.ino) must be fetched before it is written") }
        let written = try withLeases([(file.ino, .exclusive)], "write") { () throws(FileSystemError) in
            var at = offset
            if file.append, let status = cache.status(fd: file.fd) { at = status.size }
            try noteContentChange(file.ino, .written(at..<(at + Int64(data.count))))
            do throws(SystemError) {
                try Syscall.writeAll(fd: file.fd, data, at: at)
            } catch where error.errno == ENOSPC && freeDeletedContent() {
                do throws(SystemError) { try Syscall.writeAll(fd: file.fd, data, at: at) } catch {
                    throw Self.localFailure(error.errno, "write failed", cause: error)
                }
            } catch {
                throw Self.localFailure(error.errno, "write failed", cause: error)
            }
            return data.count
        }
        // Pages cached through another descriptor now hold old bytes: a racing reader may
        // even have cached them while this write was under way, and the kernel does not drop
        // them after an asynchronous direct write. The next open drops them at once.
        if file.bypassesPageCache && handles.directWriteNeedsInvalidation(file.ino) {
            notifier.invalidate([.inode(file.ino, data: true)])
        }
        if file.syncsWrites { try fsync(handle: handle) }
        return written
    }

    /// fsync and fdatasync: the file's content, then the cache folder's names, then every
    /// change the database holds (this file's and all before it) are on disk, in that
    /// order, so no row says content is here that a power cut could take away.
    public func fsync(handle: UInt64) throws(FileSystemError) {
        guard let file = handles.file(handle) else { throw FileSystemError(.badHandle) }
        guard Glibc.fsync(file.fd) == 0 else { throw Self.localFailure(errno, "fsync failed") }
        try syncState()
        handles.noteFsync(file.ino)
        sync.localChange()
    }

    /// fsync on a folder: every change on the mount so far (a rename after a safe save)
    /// is durable.
    public func fsyncDirectory(_ ino: Inode) throws(FileSystemError) {
        try syncState()
    }

    /// The cache folder's names, then the database (shared with concurrent callers).
    func syncState() throws(FileSystemError) {
        do { try cache.syncFolderIfChanged() } catch { throw Self.wrap(error) }
        do { try metadata.syncToDisk(makingRoom: spendReserve) } catch { throw Self.wrap(error) }
        cache.removeDurablyDeleted(metadata.isDurable)
        cache.reserve.restore()
    }

    /// On a full disk: the content of files deleted lately, kept until their delete is on
    /// disk (a power cut must not bring them back empty), goes now, after a sync of the
    /// database. True if any went (the caller tries again), as `rm` then `fallocate` on
    /// ext4 finds the space at once.
    func freeDeletedContent() -> Bool {
        guard cache.hasPendingRemovals else { return false }
        do { try metadata.syncToDisk(makingRoom: spendReserve) } catch { return false }
        return cache.removeDurablyDeleted(metadata.isDurable) > 0
    }

    /// Whether the handle was opened around the page cache (FOPEN_DIRECT_IO).
    public func isDirect(handle: UInt64) -> Bool {
        handles.file(handle)?.directIO ?? false
    }

    public func release(handle: UInt64) {
        guard let closed = handles.close(handle) else { return }
        closed.file.readahead?.stop()
        if closed.lastWriter {
            sync.localChange()
            noteIgnoreFileWritten(closed.file.ino)
            if sync.feed.isWatched, let row = try? row(closed.file.ino), row.dirtyFlags.contains(.content), !row.deleted {
                emit(.modified, row.inode)
            }
        }
        if closed.purge { purge(closed.file.ino) }
    }

    /// Like a write, an allocation by someone other than root clears setuid and setgid
    /// (the kernel does it for writes, not for FUSE's fallocate): setgid with group execute,
    /// or by a caller outside the file's group (known here by its primary group only).
    public func fallocate(handle: UInt64, mode: Int32, offset: Int64, length: Int64, caller: Caller) throws(FileSystemError) {
        guard let file = handles.file(handle), file.writable else { throw FileSystemError(.badHandle) }
        guard mode == 0 else { throw FileSystemError(.notSupported) }
        guard file.partial == nil else { throw FileSystemError(.io, "inode \(file.ino) must be fetched before it is written") }
        let clearedSetID = try withLeases([(file.ino, .exclusive)], "fallocate") { () throws(FileSystemError) -> Bool in
            try noteContentChange(file.ino, .written(offset..<(offset + length)))
            var result = posix_fallocate(file.fd, off_t(offset), off_t(length))
            if result == ENOSPC && freeDeletedContent() { result = posix_fallocate(file.fd, off_t(offset), off_t(length)) }
            guard result == 0 else { throw Self.localFailure(result, "fallocate failed") }
            guard caller.uid != 0 else { return false }
            let current = try row(file.ino)
            let inGroup = Int64(caller.gid) == current.gid
            guard Self.clearingSetID(current.mode, inGroup: inGroup) != current.mode else { return false }
            return try write { db in
                guard var row = try ItemRow.find(ino: file.ino, db) else { return false }
                let cleared = Self.clearingSetID(row.mode, inGroup: inGroup)
                guard cleared != row.mode else { return false }
                row.mode = cleared
                row.markChanged(.metadata, now: Timestamp.now())
                try row.update(db)
                return true
            }
        }
        if clearedSetID { notifier.invalidate([.inode(file.ino, data: false)]) }
    }

    /// The mode without setuid, and without setgid where it means "run as group" (group
    /// execute set) or the caller is not in the file's group (Linux's
    /// `setattr_should_drop_sgid`; without group execute, setgid marks mandatory locking).
    static func clearingSetID(_ mode: Int64, inGroup: Bool = true) -> Int64 {
        var mode = mode & ~Int64(0o4000)
        if mode & 0o2000 != 0 && (mode & 0o010 != 0 || !inGroup) { mode &= ~Int64(0o2000) }
        return mode
    }

    // MARK: setattr

    /// chmod, chown, utimes and truncate. Truncating a placeholder to a size other than 0
    /// waits for its content first (outside any lease), as a writable open does; like
    /// `open`, the first attempt runs on the caller's thread.
    public func setAttributes(_ ino: Inode, _ changes: AttributeChanges, handle: UInt64?) async throws(FileSystemError) -> ItemAttributes {
        if let updated = try setAttributesNow(ino, changes) { return updated }
        for _ in 0..<3 {
            try await waitForContent(ino)
            if let updated = try await offloaded({ () throws(FileSystemError) in try self.setAttributesNow(ino, changes) }) { return updated }
        }
        throw FileSystemError(.io, "content of inode \(ino) keeps changing")
    }

    /// The attributes after the change; nil (nothing changed) if a truncate needs the
    /// placeholder's content first.
    private func setAttributesNow(_ ino: Inode, _ changes: AttributeChanges) throws(FileSystemError) -> ItemAttributes? {
        var metadataChanged = false
        let updated = try withLeases([(ino, .exclusive)], "setattr") { () throws(FileSystemError) -> ItemAttributes? in
            var row = try row(ino)
            let now = Timestamp.now()
            if let size = changes.size {
                guard row.itemKind == .file else { throw FileSystemError(row.itemKind == .directory ? .isDirectory : .invalid) }
                guard size >= 0 else { throw FileSystemError(.invalid) }
                // A placeholder's content is needed first, unless it is cut to 0 or empty.
                if row.contentState != .local && size != 0 && row.size != 0 { return nil }
                if row.contentState != .local {
                    try makeEmptyLocal(ino, changed: true)
                } else {
                    try noteContentChange(ino, .truncated(size))
                }
                guard Glibc.truncate(cache.path(for: ino), off_t(size)) == 0 else { throw Self.localFailure(errno, "truncate failed") }
                row = try self.row(ino)
            }
            if let mode = changes.mode {
                row.mode = Int64(mode & 0o7777)
                metadataChanged = true
            }
            if let uid = changes.uid { row.uid = Int64(uid) }
            if let gid = changes.gid { row.gid = Int64(gid) }
            if changes.uid != nil || changes.gid != nil {
                // chown clears setuid, and setgid where it means "run as group" (with group
                // execute; without, it marks mandatory locking and stays), as Linux does.
                if row.itemKind == .file { row.mode = Self.clearingSetID(row.mode) }
                row.ctime = now
            }
            if let atime = changes.atime {
                accessTimes.forget(ino)
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
                current.dirtyFlags.formUnion(changed.dirtyFlags)
                // A chmod or touch is an edit: a name removed before is no longer all that changed.
                if metadataChanged { current.dirtyFlags.remove(.nameRemoved) }
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
}
