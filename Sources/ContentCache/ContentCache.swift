import Glibc
import Inodes
import ItemModel
import Synchronization

/// Local content, one file per item named by its inode number (`cache/<ino>`), never by
/// a name from the store. Files are opened with O_NOFOLLOW. New versions are written to
/// `cache/tmp/`, fsynced, renamed into place and the folder fsynced, so a crash leaves
/// either the old or the new version. Open descriptors keep the version they opened.
/// Names made or removed in the cache folder are remembered until `syncFolderIfChanged`
/// makes them durable, so an fsync syncs the folder only when a name changed.
public final class ContentCache: Sendable {
    public let directory: String
    private let tempDirectory: String
    private let folderChanged = Atomic<Bool>(false)
    private let pendingRemovals = PendingRemovals()
    /// Room kept on the state disk for deletes when it is full.
    public let reserve: SpaceReserve

    /// UTIME_OMIT from <sys/stat.h>, a macro Swift does not import: leave that time alone.
    private static let utimeOmit = (1 << 30) - 2

    public init(directory: String) throws(CacheError) {
        self.directory = directory
        self.tempDirectory = directory + "/tmp"
        do {
            try Syscall.makeDirectories(tempDirectory, mode: 0o700)
        } catch {
            throw CacheError("cannot create the cache folder \(directory)", error)
        }
        reserve = SpaceReserve(path: directory + "/reserve")
        clearTemporaries()
    }

    public func path(for ino: Inode) -> String { directory + "/" + String(ino.rawValue) }

    /// Opens the item's cache file, which must exist.
    public func open(_ ino: Inode, writable: Bool) throws(CacheError) -> Int32 {
        let flags = (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC
        do {
            return try Syscall.check("open") { Glibc.open(path(for: ino), flags, 0o600) }
        } catch {
            throw CacheError("cannot open the cache file of inode \(ino)", error)
        }
    }

    /// Makes the item's content an empty local file (new files, O_TRUNC on a placeholder).
    /// `mtime`: the item's, for an empty file that is no change (the cache file's mtime is
    /// the one shown); nil leaves it now.
    public func createEmpty(_ ino: Inode, mtime: Int64? = nil) throws(CacheError) {
        pendingRemovals.cancel(ino)
        do {
            let fd = try Syscall.check("open") { Glibc.open(path(for: ino), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            if let mtime { setModificationTime(fd: fd, nanoseconds: mtime) }
            folderChanged.store(true, ordering: .releasing)
            close(fd)
        } catch {
            throw CacheError("cannot create the cache file of inode \(ino)", error)
        }
    }

    /// Drops the content now (eviction, remote change: what the database says of it is
    /// already on disk); open descriptors keep reading it.
    public func remove(_ ino: Inode) {
        pendingRemovals.cancel(ino)
        unlinkContent(ino)
    }

    /// Drops a deleted item's content once the database sync numbered `mark` (or a later
    /// one) has finished (`removeDurablyDeleted`).
    public func removeOnceDurable(_ ino: Inode, mark: UInt64) {
        pendingRemovals.add(ino, mark: mark)
    }

    /// Drops the content whose delete `isDurable` now; how many.
    @discardableResult
    public func removeDurablyDeleted(_ isDurable: (UInt64) -> Bool) -> Int {
        pendingRemovals.drain(isDurable: isDurable) { ino in unlinkContent(ino) }
    }

    /// Whether `ino`'s content waits for its delete to be on disk.
    public func awaitsRemoval(_ ino: Inode) -> Bool { pendingRemovals.contains(ino) }

    /// Whether any deleted content waits for its delete to be on disk.
    public var hasPendingRemovals: Bool { pendingRemovals.oldest != nil }

    /// Since when the oldest removal waits for a database sync; nil if none waits.
    public var oldestPendingRemoval: ContinuousClock.Instant? { pendingRemovals.oldest }

    private func unlinkContent(_ ino: Inode) {
        if unlink(path(for: ino)) == 0 { folderChanged.store(true, ordering: .releasing) }
    }

    /// A new sparse file of `size` bytes for a fill (`O_EXCL`: the caller removed the old
    /// one); its descriptor, which the caller closes.
    public func createSparse(_ ino: Inode, size: Int64) throws(CacheError) -> Int32 {
        pendingRemovals.cancel(ino)
        let fd = Glibc.open(path(for: ino), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheError("cannot create the cache file of inode \(ino)", SystemError(errno: errno, call: "open")) }
        folderChanged.store(true, ordering: .releasing)
        guard ftruncate(fd, off_t(size)) == 0 else {
            let error = SystemError(errno: errno, call: "ftruncate")
            close(fd)
            remove(ino)
            throw CacheError("cannot make room for inode \(ino)", error)
        }
        return fd
    }

    public func status(_ ino: Inode) -> CacheFileStatus? {
        var info = stat()
        guard lstat(path(for: ino), &info) == 0 else { return nil }
        return Self.status(info)
    }

    public func status(fd: Int32) -> CacheFileStatus? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return Self.status(info)
    }

    private static func status(_ info: stat) -> CacheFileStatus {
        CacheFileStatus(
            size: Int64(info.st_size),
            mtime: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            blocks: Int64(info.st_blocks)
        )
    }

    /// Sets the cache file's mtime so it matches the item's (the cache file is the local truth).
    public func setModificationTime(_ ino: Inode, nanoseconds: Int64) {
        var times = [timespec(tv_sec: 0, tv_nsec: Self.utimeOmit), Timestamp.timespec(nanoseconds)]
        utimensat(AT_FDCWD, path(for: ino), &times, AT_SYMLINK_NOFOLLOW)
    }

    /// The same through a descriptor (a partial file's, which may have been renamed over).
    public func setModificationTime(fd: Int32, nanoseconds: Int64) {
        var times = [timespec(tv_sec: 0, tv_nsec: Self.utimeOmit), Timestamp.timespec(nanoseconds)]
        futimens(fd, &times)
    }

    public func makeTemporary() throws(CacheError) -> TemporaryCacheFile {
        let path = tempDirectory + "/" + ItemID.random().rawValue
        do {
            let fd = try Syscall.check("open") { Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            return TemporaryCacheFile(fd: fd, path: path)
        } catch {
            throw CacheError("cannot create a temporary cache file", error)
        }
    }

    /// A fresh path in the temporary folder, with no file there yet (for a program that
    /// makes its own file, such as a database merge); cleared at the next start like the rest.
    public func temporaryPath() -> String {
        tempDirectory + "/" + ItemID.random().rawValue
    }

    public func discard(_ temporary: TemporaryCacheFile) {
        temporary.close()
        unlink(temporary.path)
    }

    /// fsync, then rename over the item's cache file (atomic); `syncFolder` makes it durable.
    /// On failure the temporary is left to the caller's `discard`.
    public func install(_ temporary: TemporaryCacheFile, as ino: Inode, mtime: Int64) throws(CacheError) {
        var times = [timespec(tv_sec: 0, tv_nsec: Self.utimeOmit), Timestamp.timespec(mtime)]
        futimens(temporary.fd, &times)
        pendingRemovals.cancel(ino)
        do {
            try Syscall.check("fsync") { fsync(temporary.fd) }
            try Syscall.check("rename") { rename(temporary.path, path(for: ino)) }
            folderChanged.store(true, ordering: .releasing)
        } catch {
            throw CacheError("cannot install downloaded content of inode \(ino)", error)
        }
        temporary.close()
    }

    /// `install`, then the cache folder fsynced so the rename survives a power loss; off
    /// the cooperative pool (fsync and rename block). For downloads and restores alike. A
    /// failed folder fsync is reported (the content is in place, its durability in doubt;
    /// a `discard` after it is harmless).
    public func installDurably(_ temporary: TemporaryCacheFile, as ino: Inode, mtime: Int64) async throws(CacheError) {
        try await OffloadedWork.run { () throws(CacheError) in
            try self.install(temporary, as: ino, mtime: mtime)
            try self.syncFolder()
        }
    }

    /// Makes the renames in the cache folder durable.
    public func syncFolder() throws(CacheError) {
        folderChanged.store(false, ordering: .releasing)
        do { try Syscall.fsyncDirectory(directory) } catch {
            folderChanged.store(true, ordering: .releasing)
            throw CacheError("cannot sync the cache folder", error)
        }
    }

    /// `syncFolder` if a name in the cache folder changed since the last one: before a
    /// database sync that may say a file is here.
    public func syncFolderIfChanged() throws(CacheError) {
        guard folderChanged.load(ordering: .acquiring) else { return }
        try syncFolder()
    }

    /// Inode numbers that have a cache file (for reconciling with the database at startup).
    public func cachedInodes() -> [Inode] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var inodes: [Inode] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if let ino = UInt64(name) { inodes.append(Inode(ino)) }
        }
        return inodes
    }

    private func clearTemporaries() {
        Self.removeEntries(of: tempDirectory)
    }

    /// Removes what a folder holds; a folder in it (a database merge's workspace, left by
    /// a crash: files only) with what it holds.
    private static func removeEntries(of folder: String) {
        guard let dir = opendir(folder) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name != "." && name != ".." else { continue }
            let path = folder + "/" + name
            if unlink(path) != 0 && errno == EISDIR {
                removeEntries(of: path)
                rmdir(path)
            }
        }
    }
}
