internal import CFuse3
internal import Glibc
import Inodes

/// Builds libfuse's operations table. Every field is a capture-free closure (a C function
/// pointer) that finds the Swift side through fuse_req_userdata, copies its pointer arguments
/// and forwards. Locking, bmap, ioctl, poll, access, copy_file_range and lseek are left out on
/// purpose: the kernel then handles POSIX and flock locks locally and answers access itself.
enum FuseLowLevelOperations {
    static func make() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        session(&ops)
        names(&ops)
        files(&ops)
        folders(&ops)
        attributes(&ops)
        return ops
    }

    /// Start and end of the session, and the kernel dropping its references.
    private static func session(_ ops: inout fuse_lowlevel_ops) {
        ops.`init` = { userdata, conn in
            guard let conn else { return }
            var info = FuseConnectionInfo(conn.pointee)
            dispatcher(userdata).operations.initialize(connection: &info)
            info.apply(to: &conn.pointee)
        }
        ops.destroy = { userdata in
            dispatcher(userdata).operations.destroy()
        }
        ops.forget = { req, ino, lookups in
            dispatcher(fuse_req_userdata(req)).operations.forget(ino: Inode(ino), lookups: lookups)
            fuse_reply_none(req)
        }
        ops.forget_multi = { req, count, forgets in
            let operations = dispatcher(fuse_req_userdata(req)).operations
            for item in UnsafeBufferPointer(start: forgets, count: count) {
                operations.forget(ino: Inode(item.ino), lookups: item.nlookup)
            }
            fuse_reply_none(req)
        }
    }

    /// Lookups, attributes, and changes to names.
    private static func names(_ ops: inout fuse_lowlevel_ops) {
        ops.lookup = { req, parent, name in
            forward(req, .lookup) { $0.lookup($1, parent: Inode(parent), name: bytes(name)) }
        }
        ops.getattr = { req, ino, fi in
            forward(req, .getattr) { $0.getattr($1, ino: Inode(ino), handle: fi?.pointee.fh) }
        }
        ops.setattr = { req, ino, attr, toSet, fi in
            let changes = FuseSetAttributes(attr!.pointee, toSet: toSet)
            forward(req, .setattr) { $0.setattr($1, ino: Inode(ino), changes: changes, handle: fi?.pointee.fh) }
        }
        ops.readlink = { req, ino in
            forward(req, .readlink) { $0.readlink($1, ino: Inode(ino)) }
        }
        ops.mknod = { req, parent, name, mode, rdev in
            forward(req, .mknod) { $0.mknod($1, parent: Inode(parent), name: bytes(name), mode: mode, rdev: UInt64(rdev)) }
        }
        ops.mkdir = { req, parent, name, mode in
            forward(req, .mkdir) { $0.mkdir($1, parent: Inode(parent), name: bytes(name), mode: mode) }
        }
        ops.unlink = { req, parent, name in
            forward(req, .unlink) { $0.unlink($1, parent: Inode(parent), name: bytes(name)) }
        }
        ops.rmdir = { req, parent, name in
            forward(req, .rmdir) { $0.rmdir($1, parent: Inode(parent), name: bytes(name)) }
        }
        ops.symlink = { req, target, parent, name in
            forward(req, .symlink) { $0.symlink($1, target: bytes(target), parent: Inode(parent), name: bytes(name)) }
        }
        ops.rename = { req, parent, name, newParent, newName, flags in
            forward(req, .rename) {
                $0.rename(
                    $1, parent: Inode(parent), name: bytes(name), newParent: Inode(newParent), newName: bytes(newName),
                    flags: FuseRenameFlags(rawValue: flags)
                )
            }
        }
        ops.link = { req, ino, newParent, newName in
            forward(req, .link) { $0.link($1, ino: Inode(ino), newParent: Inode(newParent), newName: bytes(newName)) }
        }
    }

    /// Open files.
    private static func files(_ ops: inout fuse_lowlevel_ops) {
        ops.open = { req, ino, fi in
            forward(req, .open) { $0.open($1, ino: Inode(ino), flags: fi!.pointee.flags) }
        }
        ops.create = { req, parent, name, mode, fi in
            forward(req, .create) { $0.create($1, parent: Inode(parent), name: bytes(name), mode: mode, flags: fi!.pointee.flags) }
        }
        ops.read = { req, ino, size, offset, fi in
            forward(req, .read) { $0.read($1, ino: Inode(ino), handle: fi!.pointee.fh, size: size, offset: Int64(offset)) }
        }
        ops.write = { req, ino, buffer, size, offset, fi in
            let data = UnsafeRawBufferPointer(start: buffer, count: size)
            forward(req, .write) { $0.write($1, ino: Inode(ino), handle: fi!.pointee.fh, data: data, offset: Int64(offset)) }
        }
        ops.flush = { req, ino, fi in
            forward(req, .flush) { $0.flush($1, ino: Inode(ino), handle: fi!.pointee.fh) }
        }
        ops.release = { req, ino, fi in
            forward(req, .release) { $0.release($1, ino: Inode(ino), handle: fi!.pointee.fh, flags: fi!.pointee.flags) }
        }
        ops.fsync = { req, ino, dataOnly, fi in
            forward(req, .fsync) { $0.fsync($1, ino: Inode(ino), handle: fi!.pointee.fh, dataOnly: dataOnly != 0) }
        }
    }

    /// Folders and the filesystem.
    private static func folders(_ ops: inout fuse_lowlevel_ops) {
        ops.opendir = { req, ino, fi in
            forward(req, .opendir) { $0.opendir($1, ino: Inode(ino), flags: fi!.pointee.flags) }
        }
        ops.readdir = { req, ino, size, offset, fi in
            forward(req, .readdir) {
                $0.readdir($1, ino: Inode(ino), handle: fi!.pointee.fh, size: size, offset: UInt64(offset), plus: false)
            }
        }
        ops.readdirplus = { req, ino, size, offset, fi in
            forward(req, .readdirplus) {
                $0.readdir($1, ino: Inode(ino), handle: fi!.pointee.fh, size: size, offset: UInt64(offset), plus: true)
            }
        }
        ops.releasedir = { req, ino, fi in
            forward(req, .releasedir) { $0.releasedir($1, ino: Inode(ino), handle: fi!.pointee.fh) }
        }
        ops.fsyncdir = { req, ino, dataOnly, fi in
            forward(req, .fsyncdir) { $0.fsyncdir($1, ino: Inode(ino), handle: fi!.pointee.fh, dataOnly: dataOnly != 0) }
        }
        ops.statfs = { req, ino in
            forward(req, .statfs) { $0.statfs($1, ino: Inode(ino)) }
        }
    }

    /// Extended attributes and preallocation.
    private static func attributes(_ ops: inout fuse_lowlevel_ops) {
        ops.setxattr = { req, ino, name, value, size, flags in
            let copied = [UInt8](UnsafeRawBufferPointer(start: value, count: size))
            forward(req, .setxattr) { $0.setxattr($1, ino: Inode(ino), name: bytes(name), value: copied, flags: flags) }
        }
        ops.getxattr = { req, ino, name, size in
            forward(req, .getxattr) { $0.getxattr($1, ino: Inode(ino), name: bytes(name), size: size) }
        }
        ops.listxattr = { req, ino, size in
            forward(req, .listxattr) { $0.listxattr($1, ino: Inode(ino), size: size) }
        }
        ops.removexattr = { req, ino, name in
            forward(req, .removexattr) { $0.removexattr($1, ino: Inode(ino), name: bytes(name)) }
        }
        ops.fallocate = { req, ino, mode, offset, length, fi in
            forward(req, .fallocate) {
                $0.fallocate(
                    $1, ino: Inode(ino), handle: fi!.pointee.fh, mode: mode, offset: Int64(offset), length: Int64(length)
                )
            }
        }
    }
}

private func dispatcher(_ userdata: UnsafeMutableRawPointer?) -> FuseDispatcher {
    Unmanaged<FuseDispatcher>.fromOpaque(userdata!).takeUnretainedValue()
}

/// Wraps the request and hands it with the operations to `body`.
private func forward(_ req: OpaquePointer?, _ operation: FuseOperationKind, _ body: (any FuseOperations, FuseRequest) -> Void) {
    let dispatcher = dispatcher(fuse_req_userdata(req))
    body(dispatcher.operations, FuseRequest(raw: req!, session: dispatcher.session!, operation: operation))
}

/// Copies a NUL-terminated name libfuse owns.
private func bytes(_ name: UnsafePointer<CChar>?) -> [UInt8] {
    guard let name else { return [] }
    return [UInt8](UnsafeRawBufferPointer(start: name, count: strlen(name)))
}
