import FuseKit
import Glibc
import Inodes
import ItemModel
import Logging
import Synchronization

/// The FUSE face of `FileSystemCore`: each callback calls the core, replies, or maps the
/// error. The core's async operations (open, read, setattr: they may wait for content)
/// start on the libfuse thread and reply from it when nothing needs waiting for; a wait
/// frees the thread and the reply comes later. A kernel interrupt (Ctrl-C) cancels it.
public final class FuseAdapter: FuseOperations {
    public let core: FileSystemCore
    let logger: Logger
    /// Name and listing requests so far, for `ubiqfs status`.
    public let requestCounts = KernelRequestCounts()

    /// The kernel keeps names and attributes this long; the sync engine invalidates them
    /// explicitly when another device changes something.
    static let cacheTimeout: Double = 600

    /// The generation of every entry but the root (`MetadataStore.inodeGeneration`).
    let inodeGeneration: UInt64

    public init(core: FileSystemCore, inodeGeneration: UInt64, logger: Logger) {
        self.core = core
        self.inodeGeneration = inodeGeneration
        self.logger = logger
    }

    /// Set at init when the kernel takes ENOSYS from opendir as "never ask again": it then
    /// opens folders itself and keeps their listings cached, with no round trip per opendir
    /// and releasedir (two per folder that `git status` or `find` walks).
    private let zeroMessageOpendir = Atomic<Bool>(false)


    public func initialize(connection: inout FuseConnectionInfo) {
        // Lookups of "." and ".." (`FileSystemCore.lookupByHandle`): file handles survive
        // the kernel forgetting an inode (open_by_handle_at, NFS export).
        connection.want.insert(.exportSupport)
        // Reads are answered from the cache file (`FuseRequest.reply(file:)`): spliced on
        // into the reply, the kernel copies its pages once, with no copy through the daemon.
        connection.want.insert(.spliceWrite)
        zeroMessageOpendir.store(connection.capable.contains(.noOpendirSupport), ordering: .relaxed)
        let invalidatesOnDirectWrite = connection.protocolMajor > 7 || connection.protocolMinor >= 39
        core.openWriteOnlyDirect(invalidatesOnDirectWrite)
        // max_write also bounds the page-cache folio size on kernels whose FUSE has large folios.
        logger.debug("FUSE \(connection.protocolMajor).\(connection.protocolMinor); write-only opens direct: \(invalidatesOnDirectWrite); max_write \(connection.maxWrite), max_readahead \(connection.maxReadahead)")
    }

    public func destroy() {}

    // MARK: Helpers

    private func fail(_ request: FuseRequest, _ error: any Error, _ operation: @autoclosure () -> String) {
        let code = ErrnoMapping.errno(for: error)
        if code == EIO || code == ENOSPC || code == ENETUNREACH || code == EBUSY {
            logger.error("\(operation()) failed: \(error)")
        } else {
            logger.trace("\(operation()): \(error)")
        }
        request.reply(error: code)
    }

    static func fuseAttributes(_ attributes: ItemAttributes) -> FuseAttributes {
        let type: UInt32 = switch attributes.kind {
        case .file: UInt32(S_IFREG)
        case .directory: UInt32(S_IFDIR)
        case .symlink: UInt32(S_IFLNK)
        case .fifo: UInt32(S_IFIFO)
        case .socket: UInt32(S_IFSOCK)
        case .characterDevice: UInt32(S_IFCHR)
        case .blockDevice: UInt32(S_IFBLK)
        // Never: a name resolves to its item before its attributes are taken.
        case .link: UInt32(S_IFREG)
        }
        func time(_ ns: Int64) -> FuseTimespec {
            var seconds = ns / 1_000_000_000
            var nanoseconds = ns % 1_000_000_000
            if nanoseconds < 0 {
                seconds -= 1
                nanoseconds += 1_000_000_000
            }
            return FuseTimespec(seconds: seconds, nanoseconds: nanoseconds)
        }
        return FuseAttributes(
            ino: attributes.ino, mode: type | attributes.permissions, nlink: attributes.nlink,
            uid: attributes.uid, gid: attributes.gid, size: UInt64(max(0, attributes.size)),
            blocks: UInt64(max(0, attributes.blocks)), blockSize: 4096,
            atime: time(attributes.atime), mtime: time(attributes.mtime), ctime: time(attributes.ctime),
            rdev: attributes.rdev
        )
    }

    /// Seconds and nanoseconds as one Int64, clamped to the times every reader accepts (a
    /// `touch -d` far in the future must not trap, and syncs as clamped).
    static func nanoseconds(_ time: FuseTimespec) -> Int64 {
        let range = RecordValidator.mtimes
        let (scaled, overflow) = time.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return time.seconds < 0 ? range.lowerBound : range.upperBound }
        let (sum, overflowed) = scaled.addingReportingOverflow(time.nanoseconds)
        if overflowed { return time.seconds < 0 ? range.lowerBound : range.upperBound }
        return max(range.lowerBound, min(range.upperBound, sum))
    }

    /// The root's generation stays 0: the kernel made the root inode with 0 and would take
    /// any other value in a lookup (of ".." by handle) as the root replaced.
    private func entry(_ attributes: ItemAttributes) -> FuseEntry {
        let generation = attributes.ino == .root ? 0 : inodeGeneration
        return FuseEntry(attributes: Self.fuseAttributes(attributes), generation: generation, entryTimeout: Self.cacheTimeout, attributeTimeout: Self.cacheTimeout)
    }

    private static func caller(_ request: FuseRequest) -> Caller {
        Caller(uid: request.context.uid, gid: request.context.gid, pid: request.context.pid)
    }

    /// The one way an async operation replies: `work` starts at once on this libfuse
    /// thread (`Task.immediate`) and replies from it unless it has to wait, which frees
    /// the thread; a kernel interrupt (Ctrl-C) cancels the Task (the interrupt handler is
    /// registered before the Task exists), and a thrown error becomes the reply.
    private func reply(_ request: FuseRequest, _ operation: String, _ work: @escaping @Sendable (FileSystemCore) async throws(FileSystemError) -> Void) {
        let box = CancellationBox()
        request.onInterrupt { box.cancel() }
        let core = self.core
        box.attach(Task.immediate {
            do throws(FileSystemError) { try await work(core) } catch { self.fail(request, error, operation) }
        })
    }

    // MARK: Names

    public func lookup(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        requestCounts.noteLookup()
        do {
            request.reply(entry: self.entry(try core.lookup(parent: parent, name: name)))
        } catch where error.code == .notFound {
            request.replyNegativeEntry(timeout: Self.cacheTimeout)
        } catch {
            fail(request, error, "lookup")
        }
    }

    public func forget(ino: Inode, lookups: UInt64) {
        core.forget(ino, count: lookups)
    }

    public func getattr(_ request: FuseRequest, ino: Inode, handle: UInt64?) {
        requestCounts.noteGetattr()
        do {
            request.reply(attributes: Self.fuseAttributes(try core.attributes(ino)), timeout: Self.cacheTimeout)
        } catch {
            fail(request, error, "getattr")
        }
    }

    public func setattr(_ request: FuseRequest, ino: Inode, changes: FuseSetAttributes, handle: UInt64?) {
        func time(_ change: FuseTimeChange?) -> AttributeChanges.Time? {
            switch change {
            case .none: nil
            case .now: .now
            case .time(let value): .at(Self.nanoseconds(value))
            }
        }
        let wanted = AttributeChanges(
            mode: changes.mode, uid: changes.uid, gid: changes.gid, size: changes.size.map { Int64(clamping: $0) },
            atime: time(changes.atime), mtime: time(changes.mtime)
        )
        reply(request, "setattr") { core throws(FileSystemError) in
            let attributes = try await core.setAttributes(ino, wanted, handle: handle)
            request.reply(attributes: Self.fuseAttributes(attributes), timeout: Self.cacheTimeout)
        }
    }

    public func readlink(_ request: FuseRequest, ino: Inode) {
        do { request.reply(readlink: try core.readlink(ino)) } catch { fail(request, error, "readlink") }
    }

    public func mknod(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, rdev: UInt64) {
        do {
            request.reply(entry: self.entry(try core.mknod(parent: parent, name: name, mode: mode, rdev: rdev, caller: Self.caller(request))))
        } catch {
            fail(request, error, "mknod")
        }
    }

    public func mkdir(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32) {
        do {
            request.reply(entry: self.entry(try core.mkdir(parent: parent, name: name, mode: mode, caller: Self.caller(request))))
        } catch {
            fail(request, error, "mkdir")
        }
    }

    public func unlink(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        do {
            try core.unlink(parent: parent, name: name, directory: false)
            request.reply(error: 0)
        } catch {
            fail(request, error, "unlink")
        }
    }

    public func rmdir(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        do {
            try core.unlink(parent: parent, name: name, directory: true)
            request.reply(error: 0)
        } catch {
            fail(request, error, "rmdir")
        }
    }

    public func symlink(_ request: FuseRequest, target: [UInt8], parent: Inode, name: [UInt8]) {
        do {
            request.reply(entry: self.entry(try core.symlink(parent: parent, name: name, target: target, caller: Self.caller(request))))
        } catch {
            fail(request, error, "symlink")
        }
    }

    public func rename(_ request: FuseRequest, parent: Inode, name: [UInt8], newParent: Inode, newName: [UInt8], flags: FuseRenameFlags) {
        guard !flags.contains(.whiteout) else {
            request.reply(error: EINVAL)
            return
        }
        do {
            try core.rename(
                parent: parent, name: name, newParent: newParent, newName: newName,
                exchange: flags.contains(.exchange), noReplace: flags.contains(.noReplace)
            )
            request.reply(error: 0)
        } catch {
            fail(request, error, "rename")
        }
    }

    public func link(_ request: FuseRequest, ino: Inode, newParent: Inode, newName: [UInt8]) {
        do {
            request.reply(entry: entry(try core.link(ino, newParent: newParent, newName: newName)))
        } catch {
            fail(request, error, "link")
        }
    }

    // MARK: Files

    public func open(_ request: FuseRequest, ino: Inode, flags: Int32) {
        reply(request, "open") { core throws(FileSystemError) in
            let opened = try await core.open(ino, flags: flags, caller: Self.caller(request))
            request.reply(open: self.opened(opened.handle, keepCache: opened.keepCache, directIO: opened.directIO))
        }
    }

    public func create(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, flags: Int32) {
        do {
            let (attributes, handle) = try core.create(parent: parent, name: name, mode: mode, flags: flags, caller: Self.caller(request))
            request.reply(entry: self.entry(attributes), open: self.opened(handle, keepCache: true, directIO: core.isDirect(handle: handle)))
        } catch {
            fail(request, error, "create")
        }
    }

    public func read(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: Int64) {
        reply(request, "read") { core throws(FileSystemError) in
            try await core.read(handle: handle, size: size, offset: offset) { file, offset, count throws(FileSystemError) in
                do { try request.reply(file: file, offset: offset, count: count) } catch {
                    throw FileSystemError(.io, "read failed", cause: error)
                }
            }
        }
    }

    /// The first write to a placeholder opened for writing fetches the rest of it first:
    /// the bytes are copied (the buffer is libfuse's for this call only) and written after.
    public func write(_ request: FuseRequest, ino: Inode, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64) {
        guard core.needsContentBeforeWrite(handle: handle) else {
            do { request.reply(written: try core.write(handle: handle, data: data, offset: offset)) } catch { fail(request, error, "write") }
            return
        }
        let bytes = Array(data)
        reply(request, "write") { core throws(FileSystemError) in
            request.reply(written: try await core.write(handle: handle, bytes: bytes, offset: offset))
        }
    }

    /// Nothing to do: writes reach the cache file as they come. Files are opened with
    /// noFlush, so a kernel that knows FOPEN_NOFLUSH never asks.
    public func flush(_ request: FuseRequest, ino: Inode, handle: UInt64) {
        request.reply(error: 0)
    }

    /// An open file's reply. noFlush saves a round trip on every close(2). A write-only
    /// descriptor (cp's, tar's, a compiler's output) writes around the page cache where the
    /// core says so (`OpenFile.directIO`): the kernel sends the program's pages as they are
    /// instead of copying them into a cache of its own first (1 GiB in 1 MiB writes: 1.0 s
    /// -> 0.5 s), and sends no security.capability getxattr before each write; it cannot be
    /// mmap-ed or read, so nothing is lost by it.
    private func opened(_ handle: UInt64, keepCache: Bool, directIO: Bool = false) -> FuseOpenOptions {
        FuseOpenOptions(handle: handle, keepCache: keepCache, directIO: directIO, noFlush: true)
    }

    public func release(_ request: FuseRequest, ino: Inode, handle: UInt64, flags: Int32) {
        core.release(handle: handle)
        request.reply(error: 0)
    }

    public func fsync(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool) {
        do {
            try core.fsync(handle: handle)
            request.reply(error: 0)
        } catch {
            fail(request, error, "fsync")
        }
    }

    public func fallocate(_ request: FuseRequest, ino: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64) {
        let caller = Self.caller(request)
        reply(request, "fallocate") { core throws(FileSystemError) in
            try await core.fallocateFetching(handle: handle, mode: mode, offset: offset, length: length, caller: caller)
            request.reply(error: 0)
        }
    }

    // MARK: Folders

    public func opendir(_ request: FuseRequest, ino: Inode, flags: Int32) {
        if zeroMessageOpendir.load(ordering: .relaxed) {
            // The kernel checks the folder exists; readdir answers for what it holds.
            request.reply(error: ENOSYS)
            return
        }
        do {
            try core.checkDirectory(ino)
            // The kernel keeps the listing across opens; it drops it itself when a name in the
            // folder changes through the mount, and KernelNotifier drops it for remote changes.
            request.reply(open: FuseOpenOptions(handle: 0, keepCache: true, cacheDirectory: true))
        } catch {
            fail(request, error, "opendir")
        }
    }

    public func readdir(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: UInt64, plus: Bool) {
        requestCounts.noteReaddir(plus: plus)
        do {
            let entries = try core.list(ino, after: offset, limit: FuseDirectoryBuffer.maxEntries(capacity: size, plus: plus))
            var buffer = FuseDirectoryBuffer(request: request, capacity: size, plus: plus)
            for entry in entries {
                let attributes = Self.fuseAttributes(entry.attributes)
                let item = FuseDirectoryEntry(name: entry.name, ino: attributes.ino, mode: attributes.mode, nextOffset: entry.nextOffset)
                if plus && entry.name != [46] && entry.name != [46, 46] {
                    guard buffer.add(item, plus: self.entry(entry.attributes)) else { break }
                    core.noteListed(entry.attributes.ino)
                } else {
                    guard buffer.add(item) else { break }
                }
            }
            request.reply(directory: buffer)
        } catch {
            fail(request, error, "readdir")
        }
    }

    public func releasedir(_ request: FuseRequest, ino: Inode, handle: UInt64) {
        request.reply(error: 0)
    }

    public func fsyncdir(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool) {
        do {
            try core.fsyncDirectory(ino)
            request.reply(error: 0)
        } catch {
            fail(request, error, "fsyncdir")
        }
    }

    public func statfs(_ request: FuseRequest, ino: Inode) {
        let stats = core.statistics()
        request.reply(statfs: FuseStatfs(
            blockSize: stats.blockSize, fragmentSize: stats.blockSize, blocks: stats.total, blocksFree: stats.free,
            blocksAvailable: stats.available, files: stats.files + 1_000_000, filesFree: 1_000_000, nameMax: 255
        ))
    }

    // MARK: Extended attributes

    public func getxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], size: Int) {
        do { request.reply(xattr: try core.getXattr(ino, name: name), size: size) } catch { fail(request, error, "getxattr") }
    }

    public func listxattr(_ request: FuseRequest, ino: Inode, size: Int) {
        do { request.reply(xattr: try core.listXattrs(ino), size: size) } catch { fail(request, error, "listxattr") }
    }

    public func setxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], value: [UInt8], flags: Int32) {
        do {
            try core.setXattr(ino, name: name, value: value, flags: flags, caller: Self.caller(request))
            request.reply(error: 0)
        } catch {
            fail(request, error, "setxattr")
        }
    }

    public func removexattr(_ request: FuseRequest, ino: Inode, name: [UInt8]) {
        do {
            try core.removeXattr(ino, name: name)
            request.reply(error: 0)
        } catch {
            fail(request, error, "removexattr")
        }
    }
}
