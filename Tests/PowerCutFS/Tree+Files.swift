import FuseKit
internal import Glibc

/// Open files and their bytes. Writes change only the page cache (`FileContent`); the
/// kernel's page cache stays coherent with it because every change comes through the kernel,
/// so opens keep the cache and mmap(MAP_SHARED) works (no direct_io).
extension Tree {
    /// open(2) on an existing inode; O_TRUNC (atomic O_TRUNC) truncates here.
    mutating func open(_ ino: UInt64, flags: Int32) throws(Errno) -> FuseOpenOptions {
        let meta = try node(ino).meta
        guard !meta.isDirectory else { throw Errno(EISDIR) }
        if flags & O_TRUNC != 0, flags & O_ACCMODE != O_RDONLY, meta.isRegular {
            nodes[ino]!.content!.resize(to: 0)
            let now = FuseTimespec.now
            nodes[ino]!.meta.mtime = now
            nodes[ino]!.meta.ctime = now
        }
        let handle = nextHandle
        nextHandle += 1
        files[handle] = ino
        nodes[ino]!.opens += 1
        return FuseOpenOptions(handle: handle, keepCache: true)
    }

    /// creat(2) and open(O_CREAT): a new regular file, or (without O_EXCL) the existing one.
    mutating func create(_ parent: UInt64, _ name: [UInt8], mode: UInt32, flags: Int32, owner: FuseContext) throws(Errno) -> (FuseEntry, FuseOpenOptions) {
        if let existing = try folder(parent).children[name] {
            guard flags & O_EXCL == 0 else { throw Errno(EEXIST) }
            let options = try open(existing, flags: flags)
            return (try entry(existing), options)
        }
        let meta = NodeMetadata(mode: UInt32(S_IFREG) | mode & 0o7777, uid: owner.uid, gid: owner.gid, time: .now)
        let ino = try insert(parent, name, meta)
        let options = try open(ino, flags: flags & ~O_TRUNC)
        return (try entry(ino), options)
    }

    func handleInode(_ handle: UInt64) throws(Errno) -> UInt64 {
        guard let ino = files[handle], nodes[ino] != nil else { throw Errno(EBADF) }
        return ino
    }

    func read(_ handle: UInt64, offset: Int64, count: Int) throws(Errno) -> [UInt8] {
        let ino = try handleInode(handle)
        guard let content = nodes[ino]!.content else { throw Errno(EINVAL) }
        guard offset >= 0 else { throw Errno(EINVAL) }
        return Array(content.read(offset: Int(clamping: offset), count: count))
    }

    /// Writes at the kernel's offset (for O_APPEND the kernel sends the end of the file).
    mutating func write(_ handle: UInt64, _ data: UnsafeRawBufferPointer, offset: Int64) throws(Errno) -> Int {
        let ino = try handleInode(handle)
        guard nodes[ino]!.content != nil else { throw Errno(EINVAL) }
        guard offset >= 0, offset <= Int64(Int32.max) * 1024 else { throw Errno(EFBIG) }
        nodes[ino]!.content!.write(data, at: Int(offset))
        let now = FuseTimespec.now
        nodes[ino]!.meta.mtime = now
        nodes[ino]!.meta.ctime = now
        return data.count
    }

    mutating func release(_ handle: UInt64) {
        guard let ino = files.removeValue(forKey: handle) else { return }
        nodes[ino]?.opens -= 1
        dropIfUnused(ino)
    }

    /// Mode 0 only (posix_fallocate's): the file grows to `offset + length`, as data.
    mutating func fallocate(_ handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws(Errno) {
        guard mode == 0 else { throw Errno(EOPNOTSUPP) }
        guard offset >= 0, length > 0 else { throw Errno(EINVAL) }
        let ino = try handleInode(handle)
        guard let size = nodes[ino]!.content?.size else { throw Errno(ENODEV) }
        let end = Int(clamping: offset + length)
        if end > size {
            nodes[ino]!.content!.resize(to: end)
            let now = FuseTimespec.now
            nodes[ino]!.meta.mtime = now
            nodes[ino]!.meta.ctime = now
        }
    }
}
