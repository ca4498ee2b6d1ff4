import FuseKit
internal import Glibc

/// Names and metadata: each change is journaled by living in `nodes` until the next commit
/// (any fsync) copies every node's metadata at once, so what survives a cut is always a
/// prefix of these operations.
extension Tree {
    static let nameMax = 255

    mutating func lookup(_ parent: UInt64, _ name: [UInt8]) throws(Errno) -> FuseEntry {
        try entry(try child(parent, name))
    }

    /// Makes a node named `name` in `parent`; EEXIST if the name is taken.
    mutating func insert(_ parent: UInt64, _ name: [UInt8], _ meta: NodeMetadata) throws(Errno) -> UInt64 {
        guard !name.isEmpty else { throw Errno(ENOENT) }
        guard name.count <= Self.nameMax else { throw Errno(ENAMETOOLONG) }
        guard try folder(parent).children[name] == nil else { throw Errno(EEXIST) }
        let ino = nextIno
        nextIno += 1
        nodes[ino] = Node(meta: meta, content: meta.isRegular ? FileContent(durable: []) : nil, links: 1)
        nodes[parent]!.meta.children[name] = ino
        touch(parent)
        return ino
    }

    /// A folder's entries changed: its mtime and ctime.
    mutating func touch(_ folder: UInt64) {
        let now = FuseTimespec.now
        nodes[folder]?.meta.mtime = now
        nodes[folder]?.meta.ctime = now
    }

    mutating func mknod(_ parent: UInt64, _ name: [UInt8], mode: UInt32, rdev: UInt64, owner: FuseContext) throws(Errno) -> FuseEntry {
        let type = mode & UInt32(S_IFMT)
        let allowed = [S_IFREG, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK].map { UInt32($0) }
        guard allowed.contains(type == 0 ? UInt32(S_IFREG) : type) else { throw Errno(EINVAL) }
        let meta = NodeMetadata(mode: (type == 0 ? UInt32(S_IFREG) : type) | mode & 0o7777, uid: owner.uid, gid: owner.gid, rdev: rdev, time: .now)
        return try entry(try insert(parent, name, meta))
    }

    mutating func mkdir(_ parent: UInt64, _ name: [UInt8], mode: UInt32, owner: FuseContext) throws(Errno) -> FuseEntry {
        let meta = NodeMetadata(mode: UInt32(S_IFDIR) | mode & 0o7777, uid: owner.uid, gid: owner.gid, time: .now)
        return try entry(try insert(parent, name, meta))
    }

    mutating func symlink(_ target: [UInt8], _ parent: UInt64, _ name: [UInt8], owner: FuseContext) throws(Errno) -> FuseEntry {
        var meta = NodeMetadata(mode: UInt32(S_IFLNK) | 0o777, uid: owner.uid, gid: owner.gid, time: .now)
        meta.target = target
        return try entry(try insert(parent, name, meta))
    }

    func readlink(_ ino: UInt64) throws(Errno) -> [UInt8] {
        let meta = try node(ino).meta
        guard meta.isSymlink else { throw Errno(EINVAL) }
        return meta.target
    }

    mutating func link(_ ino: UInt64, _ parent: UInt64, _ name: [UInt8]) throws(Errno) -> FuseEntry {
        guard !(try node(ino).meta.isDirectory) else { throw Errno(EPERM) }
        guard name.count <= Self.nameMax else { throw Errno(ENAMETOOLONG) }
        guard try folder(parent).children[name] == nil else { throw Errno(EEXIST) }
        nodes[parent]!.meta.children[name] = ino
        touch(parent)
        nodes[ino]!.links += 1
        nodes[ino]!.meta.ctime = .now
        return try entry(ino)
    }

    mutating func unlink(_ parent: UInt64, _ name: [UInt8]) throws(Errno) {
        let ino = try child(parent, name)
        guard !nodes[ino]!.meta.isDirectory else { throw Errno(EISDIR) }
        nodes[parent]!.meta.children[name] = nil
        touch(parent)
        unname(ino)
    }

    mutating func rmdir(_ parent: UInt64, _ name: [UInt8]) throws(Errno) {
        let ino = try child(parent, name)
        let meta = nodes[ino]!.meta
        guard meta.isDirectory else { throw Errno(ENOTDIR) }
        guard meta.children.isEmpty else { throw Errno(ENOTEMPTY) }
        nodes[parent]!.meta.children[name] = nil
        touch(parent)
        unname(ino)
    }

    /// One name of `ino` is gone.
    private mutating func unname(_ ino: UInt64) {
        nodes[ino]!.links -= 1
        nodes[ino]!.meta.ctime = .now
        dropIfUnused(ino)
    }

    /// rename and renameat2: RENAME_NOREPLACE, RENAME_EXCHANGE; a folder may replace only an
    /// empty folder, a non-folder only a non-folder. (The kernel refuses moving a folder into
    /// itself before asking.)
    mutating func rename(_ parent: UInt64, _ name: [UInt8], _ newParent: UInt64, _ newName: [UInt8], flags: FuseRenameFlags) throws(Errno) {
        guard flags.isSubset(of: [.noReplace, .exchange]), flags != [.noReplace, .exchange] else { throw Errno(EINVAL) }
        guard newName.count <= Self.nameMax else { throw Errno(ENAMETOOLONG) }
        let source = try child(parent, name)
        let target = try folder(newParent).children[newName]
        if flags.contains(.exchange) {
            guard let target else { throw Errno(ENOENT) }
            nodes[parent]!.meta.children[name] = target
            nodes[newParent]!.meta.children[newName] = source
            finishRename(parent, newParent, moved: [source, target])
            return
        }
        if let target {
            guard !flags.contains(.noReplace) else { throw Errno(EEXIST) }
            if target == source { return }
            let sourceIsFolder = nodes[source]!.meta.isDirectory
            let targetMeta = nodes[target]!.meta
            if sourceIsFolder && !targetMeta.isDirectory { throw Errno(ENOTDIR) }
            if !sourceIsFolder && targetMeta.isDirectory { throw Errno(EISDIR) }
            if targetMeta.isDirectory && !targetMeta.children.isEmpty { throw Errno(ENOTEMPTY) }
        }
        nodes[parent]!.meta.children[name] = nil
        nodes[newParent]!.meta.children[newName] = source
        finishRename(parent, newParent, moved: [source])
        if let target { unname(target) }
    }

    private mutating func finishRename(_ parent: UInt64, _ newParent: UInt64, moved: [UInt64]) {
        touch(parent)
        touch(newParent)
        for ino in moved { nodes[ino]!.meta.ctime = .now }
    }

    /// chmod, chown, utimens, and truncate (data: only the file's own fsync keeps it).
    mutating func setattr(_ ino: UInt64, _ changes: FuseSetAttributes) throws(Errno) -> FuseAttributes {
        let meta = try node(ino).meta
        let now = FuseTimespec.now
        if let size = changes.size {
            guard meta.isRegular else { throw Errno(meta.isDirectory ? EISDIR : EINVAL) }
            nodes[ino]!.content!.resize(to: Int(clamping: size))
            nodes[ino]!.meta.mtime = now
            nodes[ino]!.meta.ctime = now
        }
        if let mode = changes.mode {
            nodes[ino]!.meta.mode = meta.type | mode & 0o7777
        }
        if let uid = changes.uid { nodes[ino]!.meta.uid = uid }
        if let gid = changes.gid { nodes[ino]!.meta.gid = gid }
        if changes.killSuid { nodes[ino]!.meta.mode &= ~UInt32(S_ISUID) }
        if changes.killSgid { nodes[ino]!.meta.mode &= ~UInt32(S_ISGID) }
        switch changes.atime {
        case .now: nodes[ino]!.meta.atime = now
        case .time(let time): nodes[ino]!.meta.atime = time
        case nil: break
        }
        switch changes.mtime {
        case .now: nodes[ino]!.meta.mtime = now
        case .time(let time): nodes[ino]!.meta.mtime = time
        case nil: break
        }
        nodes[ino]!.meta.ctime = changes.ctime ?? now
        return try attributes(ino)
    }
}
