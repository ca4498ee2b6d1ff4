import FuseKit
internal import Glibc

/// The live filesystem, that is the simulated page cache: every inode, the open files and
/// the open folders' listings. Pure state, no FUSE and no disk: `PowerCutFileSystem` keeps it
/// in a Mutex and turns results into replies, and `prepareCommit` is what an fsync hands to
/// `Backing`. Nodes are always changed in place (`nodes[ino]!...`) so a large file's bytes
/// are never copied by a write.
struct Tree {
    static let root = DurableImage.rootIno
    /// How long the kernel may cache names and attributes: 0, so neither a restarted
    /// simulator nor a cut ever meets stale kernel state.
    static let timeout = 0.0

    var nodes: [UInt64: Node] = [:]
    var nextIno: UInt64
    var nextHandle: UInt64 = 1
    /// Open files: handle -> inode.
    var files: [UInt64: UInt64] = [:]
    /// Open folders: handle -> listing.
    var folders: [UInt64: FolderListing] = [:]

    /// The tree as the durable state left it (`image` nil: a new, empty root).
    init(image: DurableImage?, contents: [UInt64: [UInt8]]) {
        guard let image else {
            let root = NodeMetadata(mode: UInt32(S_IFDIR) | 0o755, uid: getuid(), gid: getgid(), time: .now)
            nodes[Self.root] = Node(meta: root, links: 1)
            nextIno = Self.root + 1
            return
        }
        var links: [UInt64: Int] = [Self.root: 1]
        for node in image.nodes.values {
            for child in node.children.values { links[child, default: 0] += 1 }
        }
        for (ino, meta) in image.nodes {
            let content = meta.isRegular ? FileContent(durable: contents[ino] ?? []) : nil
            nodes[ino] = Node(meta: meta, content: content, links: links[ino] ?? 0)
        }
        nextIno = max(image.nextIno, (image.nodes.keys.max() ?? Self.root) + 1)
    }

    // MARK: Reading nodes

    func node(_ ino: UInt64) throws(Errno) -> Node {
        guard let node = nodes[ino] else { throw Errno(ENOENT) }
        return node
    }

    /// The folder `ino`'s metadata; ENOTDIR if it is something else.
    func folder(_ ino: UInt64) throws(Errno) -> NodeMetadata {
        let meta = try node(ino).meta
        guard meta.isDirectory else { throw Errno(ENOTDIR) }
        return meta
    }

    func child(_ parent: UInt64, _ name: [UInt8]) throws(Errno) -> UInt64 {
        guard let ino = try folder(parent).children[name] else { throw Errno(ENOENT) }
        return ino
    }

    func attributes(_ ino: UInt64) throws(Errno) -> FuseAttributes {
        let node = try node(ino)
        let size = UInt64(node.content?.size ?? (node.meta.isSymlink ? node.meta.target.count : 0))
        let nlink: Int
        if node.meta.isDirectory {
            let subfolders = node.meta.children.values.filter { nodes[$0]?.meta.isDirectory == true }.count
            nlink = node.links > 0 ? 2 + subfolders : 0
        } else {
            nlink = node.links
        }
        return FuseAttributes(
            ino: .init(ino), mode: node.meta.mode, nlink: UInt32(nlink), uid: node.meta.uid, gid: node.meta.gid,
            size: size, blocks: (size + 511) / 512, atime: node.meta.atime, mtime: node.meta.mtime,
            ctime: node.meta.ctime, rdev: node.meta.rdev
        )
    }

    /// The answer to a request that hands the kernel a name: one more lookup reference.
    mutating func entry(_ ino: UInt64) throws(Errno) -> FuseEntry {
        let attributes = try attributes(ino)
        nodes[ino]!.lookups += 1
        return FuseEntry(attributes: attributes, entryTimeout: Self.timeout, attributeTimeout: Self.timeout)
    }

    // MARK: Lifetime

    mutating func forget(_ ino: UInt64, lookups: UInt64) {
        guard nodes[ino] != nil, ino != Self.root else { return }
        nodes[ino]!.lookups -= min(lookups, nodes[ino]!.lookups)
        dropIfUnused(ino)
    }

    /// An inode with no name, no lookup and no open handle is gone (its durable copy, if
    /// any, is dropped by the next commit, which no longer reaches it).
    mutating func dropIfUnused(_ ino: UInt64) {
        if ino != Self.root, nodes[ino]?.isUnused == true {
            nodes[ino] = nil
        }
    }

    // MARK: Commits

    /// What an fsync of `ino` (nil: fsyncdir) makes durable: every node's metadata as it is
    /// now (a journal commit), and `ino`'s data if it is a regular file still reachable.
    mutating func prepareCommit(syncing ino: UInt64?) -> Commit {
        let reachable = reachableInodes()
        var updates: [DataUpdate] = []
        if let ino, reachable.contains(ino), nodes[ino]?.content != nil, let update = nodes[ino]!.content!.takeUpdate(ino: ino) {
            updates.append(update)
        }
        return Commit(image: image(of: reachable).encoded(), updates: updates)
    }

    /// A clean unmount: everything written back, as umount(8) syncs a real disk.
    mutating func prepareFullCommit() -> Commit {
        let reachable = reachableInodes()
        var updates: [DataUpdate] = []
        for ino in reachable.sorted() where nodes[ino]?.content != nil {
            if let update = nodes[ino]!.content!.takeUpdate(ino: ino) { updates.append(update) }
        }
        return Commit(image: image(of: reachable).encoded(), updates: updates)
    }

    private func image(of reachable: Set<UInt64>) -> DurableImage {
        var image = DurableImage(nextIno: nextIno, nodes: [:])
        for ino in reachable {
            image.nodes[ino] = nodes[ino]!.meta
        }
        return image
    }

    /// Inodes with a name (from the root): what survives a cut. Unlinked open files do not.
    private func reachableInodes() -> Set<UInt64> {
        var seen: Set<UInt64> = [Self.root]
        var pending = [Self.root]
        while let ino = pending.popLast() {
            guard let node = nodes[ino], node.meta.isDirectory else { continue }
            for child in node.meta.children.values where nodes[child] != nil && !seen.contains(child) {
                seen.insert(child)
                pending.append(child)
            }
        }
        return seen
    }
}
