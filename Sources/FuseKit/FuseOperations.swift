import Inodes

/// The filesystem implements this; FuseKit calls it on libfuse worker threads.
///
/// Each method that receives a request must reply on it exactly once, possibly later from a
/// Task. Block a worker thread only for quick work: there are at most `maxThreads` of them.
/// Pointer-backed arguments (`data` in write) are valid only during the call; everything
/// else is already copied. Names are raw bytes without a NUL.
public protocol FuseOperations: AnyObject, Sendable {
    /// Called once, before any request, with FuseKit's default wants preset; adjust `connection`.
    func initialize(connection: inout FuseConnectionInfo)
    /// Called once when the session is destroyed (from `FuseSession.deinit`).
    func destroy()
    func lookup(_ request: FuseRequest, parent: Inode, name: [UInt8])
    /// The kernel dropped `lookups` references to `ino` (forget and each item of forget_multi).
    /// No request: FuseKit has already answered the kernel.
    func forget(ino: Inode, lookups: UInt64)
    /// `handle` is the open file's handle for fstat, nil for a path stat.
    func getattr(_ request: FuseRequest, ino: Inode, handle: UInt64?)
    func setattr(_ request: FuseRequest, ino: Inode, changes: FuseSetAttributes, handle: UInt64?)
    func readlink(_ request: FuseRequest, ino: Inode)
    func mknod(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, rdev: UInt64)
    func mkdir(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32)
    func unlink(_ request: FuseRequest, parent: Inode, name: [UInt8])
    func rmdir(_ request: FuseRequest, parent: Inode, name: [UInt8])
    func symlink(_ request: FuseRequest, target: [UInt8], parent: Inode, name: [UInt8])
    func rename(
        _ request: FuseRequest, parent: Inode, name: [UInt8], newParent: Inode, newName: [UInt8],
        flags: FuseRenameFlags
    )
    func link(_ request: FuseRequest, ino: Inode, newParent: Inode, newName: [UInt8])
    /// `flags` are the open(2) flags; with atomic O_TRUNC, O_TRUNC arrives here.
    func open(_ request: FuseRequest, ino: Inode, flags: Int32)
    func create(_ request: FuseRequest, parent: Inode, name: [UInt8], mode: UInt32, flags: Int32)
    func read(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: Int64)
    /// `data` is valid only during the call: copy it before replying from a Task.
    func write(_ request: FuseRequest, ino: Inode, handle: UInt64, data: UnsafeRawBufferPointer, offset: Int64)
    /// Called on every close(2) of a descriptor (possibly several per open).
    func flush(_ request: FuseRequest, ino: Inode, handle: UInt64)
    /// Called once when the last descriptor of an open is gone; its reply is ignored by the kernel.
    func release(_ request: FuseRequest, ino: Inode, handle: UInt64, flags: Int32)
    func fsync(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool)
    func opendir(_ request: FuseRequest, ino: Inode, flags: Int32)
    /// `plus` is true for readdirplus: build the reply with `FuseDirectoryBuffer(plus: true)`.
    func readdir(_ request: FuseRequest, ino: Inode, handle: UInt64, size: Int, offset: UInt64, plus: Bool)
    func releasedir(_ request: FuseRequest, ino: Inode, handle: UInt64)
    func fsyncdir(_ request: FuseRequest, ino: Inode, handle: UInt64, dataOnly: Bool)
    func statfs(_ request: FuseRequest, ino: Inode)
    /// `flags` are XATTR_CREATE (1) / XATTR_REPLACE (2).
    func setxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], value: [UInt8], flags: Int32)
    /// `size` 0 asks for the value's size (`reply(xattrSize:)`); otherwise reply with the value or ERANGE.
    func getxattr(_ request: FuseRequest, ino: Inode, name: [UInt8], size: Int)
    /// Same size protocol as getxattr; the value is the NUL-terminated names back to back.
    func listxattr(_ request: FuseRequest, ino: Inode, size: Int)
    func removexattr(_ request: FuseRequest, ino: Inode, name: [UInt8])
    func fallocate(_ request: FuseRequest, ino: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64)
}
