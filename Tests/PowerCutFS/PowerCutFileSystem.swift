import FuseKit
import Inodes
internal import Glibc
internal import Synchronization

/// The FUSE face of the simulator: each callback runs one `Tree` operation under the tree's
/// lock and replies after releasing it. fsync, fdatasync and fsyncdir take the commit lock
/// first, so commits reach the backing in the order their snapshots were taken, while other
/// operations go on during the real disk's sync.
final class PowerCutFileSystem: FuseOperations {
    private let tree: Mutex<Tree>
    /// Held from a commit's snapshot until its record is on disk.
    private let backing: Mutex<Backing>
    private let backingPath: String
    private let verbose: Bool

    init(tree: sending Tree, backing: sending Backing, backingPath: String, verbose: Bool) {
        self.tree = Mutex(tree)
        self.backing = Mutex(backing)
        self.backingPath = backingPath
        self.verbose = verbose
    }

    // MARK: Helpers

    /// Runs `body` on the tree; its result goes to `send`, a thrown errno to the request.
    private func answer<T: Sendable>(
        _ request: FuseRequest, _ body: (inout Tree) throws(Errno) -> T, _ send: (FuseRequest, T) -> Void
    ) {
        let result = tree.withLock { tree -> Result<T, Errno> in
            do throws(Errno) { return .success(try body(&tree)) } catch { return .failure(error) }
        }
        switch result {
        case .success(let value): send(request, value)
        case .failure(let error): request.reply(error: error.code)
        }
    }

    private func answerEntry(_ request: FuseRequest, _ body: (inout Tree) throws(Errno) -> FuseEntry) {
        answer(request, body) { $0.reply(entry: $1) }
    }

    private func answerDone(_ request: FuseRequest, _ body: (inout Tree) throws(Errno) -> Void) {
        answer(request, body) { request, _ in request.reply(error: 0) }
    }

    /// A journal commit: every metadata change so far, and `ino`'s data. Replies once durable.
    private func commit(_ request: FuseRequest, syncing ino: UInt64?) {
        do throws(BackingError) {
            try backing.withLock { backing throws(BackingError) in
                let commit = tree.withLock { $0.prepareCommit(syncing: ino) }
                try backing.append(commit)
                if verbose {
                    log("commit \(backing.commits): \(commit.updates.count) files, \(commit.byteCount) bytes (fsync of \(ino.map(String.init) ?? "a folder"))")
                }
            }
            request.reply(error: 0)
        } catch {
            log("a commit failed, answering EIO: \(error)")
            request.reply(error: EIO)
        }
    }

    /// The journal's own periodic commit (`--commit-interval`): names and metadata, no data.
    func commitMetadata() {
        do throws(BackingError) {
            try backing.withLock { backing throws(BackingError) in
                try backing.append(tree.withLock { $0.prepareCommit(syncing: nil) })
            }
        } catch {
            log("a periodic commit failed: \(error)")
        }
    }

    /// A clean unmount writes everything back (umount syncs a real disk too).
    func commitEverything() throws(BackingError) {
        try backing.withLock { backing throws(BackingError) in
            try backing.append(tree.withLock { $0.prepareFullCommit() })
        }
    }

    private func log(_ line: String) {
        let bytes = Array("powercutfs: \(line)\n".utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    // MARK: FuseOperations

    func initialize(connection: inout FuseConnectionInfo) {
        connection.want.remove(.writebackCache)
    }

    func destroy() {}

    func lookup(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        answerEntry(request) { tree throws(Errno) in try tree.lookup(parent.rawValue, name) }
    }

    func forget(ino: Inode, lookups: UInt64) {
        tree.withLock { $0.forget(ino.rawValue, lookups: lookups) }
    }

    func getattr(_ request: FuseRequest, ino: Inode, handle: UInt64?) {
        answer(request, { tree throws(Errno) in try tree.attributes(ino.rawValue) }) { $0.reply(attributes: $1, timeout: Tree.timeout) }
    }

    func setattr(_ request: FuseRequest, ino: Inode, changes: FuseSetAttributes, handle: UInt64?) {
        answer(request, { tree throws(Errno) in try tree.setattr(ino.rawValue, changes) }) { $0.reply(attributes: $1, timeout: Tree.timeout) }
    }

    func readlink(_ request: FuseRequest, ino: Inode) {
        answer(request, { tree throws(Errno) in try tree.readlink(ino.rawValue) }) { $0.reply(readlink: $1) }
    }

    func mknod(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, rdev: UInt64) {
        let owner = request.context
        answerEntry(request) { tree throws(Errno) in try tree.mknod(parent.rawValue, name, mode: mode, rdev: rdev, owner: owner) }
    }

    func mkdir(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32) {
        let owner = request.context
        answerEntry(request) { tree throws(Errno) in try tree.mkdir(parent.rawValue, name, mode: mode, owner: owner) }
    }

    func unlink(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        answerDone(request) { tree throws(Errno) in try tree.unlink(parent.rawValue, name) }
    }

    func rmdir(_ request: FuseRequest, parent: Inode, name: [UInt8]) {
        answerDone(request) { tree throws(Errno) in try tree.rmdir(parent.rawValue, name) }
    }

    func symlink(_ request: FuseRequest, target: [UInt8], parent: Inode, name: [UInt8]) {
        let owner = request.context
        answerEntry(request) { tree throws(Errno) in try tree.symlink(target, parent.rawValue, name, owner: owner) }
    }

    func rename(_ request: FuseRequest, parent: Inode, name: [UInt8], newParent: Inode, newName: [UInt8], flags: FuseRenameFlags) {
        answerDone(request) { tree throws(Errno) in
            try tree.rename(parent.rawValue, name, newParent.rawValue, newName, flags: flags)
        }
    }

    func link(_ request: FuseRequest, ino: Inode, newParent: Inode, newName: [UInt8]) {
        answerEntry(request) { tree throws(Errno) in try tree.link(ino.rawValue, newParent.rawValue, newName) }
    }

    func open(_ request: FuseRequest, ino: Inode, flags: Int32) {
        answer(request, { tree throws(Errno) in try tree.open(ino.rawValue, flags: flags) }) { $0.reply(open: $1) }
    }

    func create(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, flags: Int32) {
        let owner = request.context
        answer(request, { tree throws(Errno) in
            try tree.create(parent.rawValue, name, mode: mode, flags: flags, owner: owner)
        }) { $0.reply(entry: $1.0, open: $1.1) }
    }

    func read(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: Int64) {
        answer(request, { tree throws(Errno) in try tree.read(handle, offset: offset, count: size) }) { $0.reply(bytes: $1) }
    }

    func write(_ request: FuseRequest, ino: Inode, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64) {
        answer(request, { tree throws(Errno) in try tree.write(handle, data, offset: offset) }) { $0.reply(written: $1) }
    }

    func flush(_ request: FuseRequest, ino: Inode, handle: UInt64) {
        request.reply(error: 0)
    }

    func release(_ request: FuseRequest, ino: Inode, handle: UInt64, flags: Int32) {
        tree.withLock { $0.release(handle) }
        request.reply(error: 0)
    }

    func fsync(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool) {
        commit(request, syncing: ino.rawValue)
    }

    func opendir(_ request: FuseRequest, ino: Inode, flags: Int32) {
        answer(request, { tree throws(Errno) in try tree.opendir(ino.rawValue) }) { $0.reply(open: $1) }
    }

    func readdir(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: UInt64, plus: Bool) {
        answer(request, { tree throws(Errno) in
            var buffer = FuseDirectoryBuffer(request: request, capacity: size, plus: plus)
            try tree.readdir(handle, offset: offset, plus: plus, into: &buffer)
            return buffer
        }) { $0.reply(directory: $1) }
    }

    func releasedir(_ request: FuseRequest, ino: Inode, handle: UInt64) {
        tree.withLock { $0.releasedir(handle) }
        request.reply(error: 0)
    }

    func fsyncdir(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool) {
        commit(request, syncing: nil)
    }

    /// The backing disk's numbers: what a state dir on it could really use.
    func statfs(_ request: FuseRequest, ino: Inode) {
        var info = statvfs()
        guard statvfs(backingPath, &info) == 0 else {
            request.reply(error: errno)
            return
        }
        request.reply(statfs: FuseStatfs(
            blockSize: UInt64(info.f_bsize), fragmentSize: UInt64(info.f_frsize), blocks: UInt64(info.f_blocks),
            blocksFree: UInt64(info.f_bfree), blocksAvailable: UInt64(info.f_bavail), files: UInt64(info.f_files),
            filesFree: UInt64(info.f_ffree), nameMax: UInt64(Tree.nameMax)
        ))
    }

    func setxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], value: [UInt8], flags: Int32) {
        answerDone(request) { tree throws(Errno) in try tree.setxattr(ino.rawValue, name, value, flags: flags) }
    }

    func getxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], size: Int) {
        answer(request, { tree throws(Errno) in try tree.getxattr(ino.rawValue, name) }) { $0.reply(xattr: $1, size: size) }
    }

    func listxattr(_ request: FuseRequest, ino: Inode, size: Int) {
        answer(request, { tree throws(Errno) in try tree.listxattr(ino.rawValue) }) { $0.reply(xattr: $1, size: size) }
    }

    func removexattr(_ request: FuseRequest, ino: Inode, name: [UInt8]) {
        answerDone(request) { tree throws(Errno) in try tree.removexattr(ino.rawValue, name) }
    }

    func fallocate(_ request: FuseRequest, ino: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64) {
        answerDone(request) { tree throws(Errno) in try tree.fallocate(handle, mode: mode, offset: offset, length: length) }
    }
}
