import ContentCache
import Foundation
import Glibc
import Inodes
import ItemModel
import MetadataStore
import Synchronization

/// The fill of each partial file, made when a placeholder is first opened or fetched:
/// a sparse cache file of the item's size whose blocks arrive as they are read. Callable
/// from libfuse threads (the open path) and the downloader alike; a caller holds a lease
/// on the item, so its committed content cannot change while a fill starts.
public final class PartialFiles: Sendable {
    let cache: ContentCache
    let metadata: MetadataStore
    private let current = Mutex<[Inode: PartialContent]>([:])

    init(cache: ContentCache, metadata: MetadataStore) {
        self.cache = cache
        self.metadata = metadata
    }

    /// The fill of a placeholder or partial file (started, or taken up where the database
    /// says it was); nil for a local file, an empty one, or anything but a file. Two
    /// callers that read the row as a placeholder at once (a reader's open and a download,
    /// both under shared leases) get the same fill: the second never starts another one,
    /// which would put a new cache file under the first one's reader.
    public func fill(for row: ItemRow) throws(SyncError) -> PartialContent? {
        guard row.itemKind == .file, row.contentState != .local, row.size > 0, !row.deleted else { return nil }
        let ino = row.inode
        return try current.withLock { (current) throws(SyncError) -> PartialContent? in
            // The fill in memory is the item's while it is there (evicts, new content and
            // completion forget it), whatever the row read before it began says.
            if let known = current[ino], known.blocks.sameContent(as: row.blockList) { return known }
            let saved: FetchedBlocks.Fill?
            do { saved = try metadata.read { db in try FetchedBlocks.fill(of: ino, db) } } catch {
                throw SyncError(code: .metadata, message: "cannot read the fetched blocks of \(row.itemName)", cause: error)
            }
            if row.contentState == .partial, let saved {
                if let resumed = resume(row, saved) {
                    current[ino] = resumed
                    return resumed
                }
            }
            guard let started = try start(row) else { return nil }
            current[ino] = started
            return started
        }
    }

    /// The fill in memory, if any (progress of a partial file).
    public func loaded(_ ino: Inode) -> PartialContent? { current.withLock { $0[ino] } }

    /// The item's content was evicted, replaced or completed: the next open starts anew
    /// (readers of this fill keep it).
    public func forget(_ ino: Inode) {
        _ = current.withLock { $0.removeValue(forKey: ino) }
    }

    /// Bytes of a partial file here, from memory or the database.
    public func presentBytes(of row: ItemRow) -> Int64 {
        if let known = loaded(row.inode), known.blocks.sameContent(as: row.blockList) { return known.presentBytes }
        guard let saved = try? metadata.read({ db in try FetchedBlocks.fill(of: row.inode, db) }) else { return 0 }
        return row.blockList.indices.reduce(0) { total, index in
            index / 8 < saved.bitmap.count && saved.bitmap[index / 8] & (1 << UInt8(index % 8)) != 0 ? total + row.blockList[index].length : total
        }
    }

    /// A fill from before a restart: its cache file must still have the item's size.
    private func resume(_ row: ItemRow, _ saved: FetchedBlocks.Fill) -> PartialContent? {
        let fd = open(cache.path(for: row.inode), O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard let status = cache.status(fd: fd), status.size == row.size else {
            close(fd)
            return nil
        }
        return PartialContent(ino: row.inode, generation: saved.generation, blocks: row.blockList, fd: fd, bitmap: saved.bitmap)
    }

    /// A new fill: an empty sparse file of the item's size, the item partial with no block.
    /// A new file, never the old one truncated: readers of an earlier fill keep theirs.
    /// nil if the item became local since `row` was read (a download completed meanwhile:
    /// its file, which a writer may have opened since, is never replaced).
    private func start(_ row: ItemRow) throws(SyncError) -> PartialContent? {
        let ino = row.inode
        let generation = Int64.random(in: 1...Int64.max)
        let started: Bool
        do {
            started = try metadata.write { db -> Bool in
                guard let now = try ItemRow.find(ino: ino, db), !now.deleted, now.contentState != .local, now.blockList.sameContent(as: row.blockList) else { return false }
                try FetchedBlocks.start(ino, generation: generation, blockCount: row.blockList.count, db)
                return true
            }
        } catch {
            throw SyncError(code: error.code == .diskFull ? .diskFull : .metadata, message: "cannot record the download of \(row.itemName)", cause: error)
        }
        guard started else { return nil }
        cache.remove(ino)
        let fd: Int32
        do { fd = try cache.createSparse(ino, size: row.size) } catch {
            throw SyncError.cacheWrite("cannot create the cache file of \(row.itemName)", error)
        }
        return PartialContent(ino: ino, generation: generation, blocks: row.blockList, fd: fd, bitmap: [])
    }
}
