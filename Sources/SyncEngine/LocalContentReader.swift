import ContentCache
import FileCoordinator
import Glibc
import Inodes
import ItemModel

/// How an upload reads a file's local content: from its cache file, each read under a
/// short shared lease (a program's single write is never split), off the cooperative pool.
struct LocalContentReader: Sendable {
    let cache: ContentCache
    let coordinator: FileCoordinator

    /// The cache file, read-only; the caller closes it.
    func open(_ ino: Inode, name: String) throws(SyncError) -> Int32 {
        do { return try cache.open(ino, writable: false) } catch {
            throw SyncError(code: .cache, message: "cannot read local content of \(name)", cause: error)
        }
    }

    /// Up to `count` bytes at `offset`; with `sync`, the file is fsynced after the read
    /// (under the same lease), so what a commit then marks clean survives a power loss.
    /// nil once the cache file is gone (the item was deleted): the upload stops there, so
    /// its descriptor no longer keeps the deleted content's space taken.
    func read(_ ino: Inode, fd: Int32, count: Int, at offset: Int64, name: String, sync: Bool = false) async throws(SyncError) -> [UInt8]? {
        let leases = try await coordinator.sharedLease(ino, for: "upload")
        defer { leases.release() }
        do {
            return try await OffloadedWork.run { () throws(SystemError) -> [UInt8]? in
                var info = stat()
                try Syscall.check("fstat") { fstat(fd, &info) }
                guard info.st_nlink > 0 else { return nil }
                let bytes = try Syscall.readFully(fd: fd, count: count, at: offset)
                if sync { try Syscall.check("fsync") { fsync(fd) } }
                return bytes
            }
        } catch {
            throw SyncError(code: .cache, message: "cannot read local content of \(name)", cause: error)
        }
    }
}
