import FuseKit
import Inodes
internal import Glibc

/// Open folders: a listing per handle with stable offsets (index + 1).
extension Tree {
    mutating func opendir(_ ino: UInt64) throws(Errno) -> FuseOpenOptions {
        let listing = try listing(ino)
        let handle = nextHandle
        nextHandle += 1
        folders[handle] = listing
        return FuseOpenOptions(handle: handle)
    }

    private func listing(_ ino: UInt64) throws(Errno) -> FolderListing {
        let meta = try folder(ino)
        let folderType = UInt32(S_IFDIR)
        var items = [FolderListing.Item(name: Array(".".utf8), ino: ino, mode: folderType),
                     FolderListing.Item(name: Array("..".utf8), ino: ino, mode: folderType)]
        for (name, child) in meta.children.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            guard let node = nodes[child] else { continue }
            items.append(FolderListing.Item(name: name, ino: child, mode: node.meta.type))
        }
        return FolderListing(ino: ino, items: items)
    }

    /// Fills `buffer` from `offset`; readdirplus entries take a lookup reference each (only
    /// those that fit). Names removed since the listing was taken are skipped.
    mutating func readdir(_ handle: UInt64, offset: UInt64, plus: Bool, into buffer: inout FuseDirectoryBuffer) throws(Errno) {
        guard var listing = folders[handle] else { throw Errno(EBADF) }
        if offset == 0 {
            listing = try self.listing(listing.ino)
            folders[handle] = listing
        }
        guard offset < UInt64(listing.items.count) else { return }
        for index in Int(offset)..<listing.items.count {
            let item = listing.items[index]
            let entry = FuseDirectoryEntry(name: item.name, ino: Inode(item.ino), mode: item.mode, nextOffset: UInt64(index + 1))
            if index < 2 {
                guard buffer.add(entry) else { return }
                continue
            }
            guard nodes[item.ino] != nil, nodes[listing.ino]?.meta.children[item.name] == item.ino else { continue }
            if plus {
                let attributes = try attributes(item.ino)
                let plusEntry = FuseEntry(attributes: attributes, entryTimeout: Self.timeout, attributeTimeout: Self.timeout)
                guard buffer.add(entry, plus: plusEntry) else { return }
                nodes[item.ino]!.lookups += 1
            } else {
                guard buffer.add(entry) else { return }
            }
        }
    }

    mutating func releasedir(_ handle: UInt64) {
        folders[handle] = nil
    }
}
