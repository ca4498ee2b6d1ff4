import ContainerStore
import ContentCache
import FileCoordinator
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// Stores a file's local content as blocks: read from the cache in order, each read under
/// a short shared lease (a write is never split), hashed and put by up to
/// `parallelTransfers` tasks at once, so a slow store's latency overlaps instead of adding up.
struct ContentUploader: Sendable {
    let calls: SyncCalls
    let info: ContainerInfo
    let cache: ContentCache
    let coordinator: FileCoordinator
    let activity: any LocalActivity
    let transfers: TransferTable
    let parallelTransfers: Int

    /// The manifest of the file's content now; nil if a write came in meanwhile (the next
    /// push reads it again). The cache file is fsynced first: what a commit marks clean
    /// must survive a power loss.
    func upload(_ row: ItemRow) async throws(SyncError) -> ContentUpload? {
        let ino = row.inode
        let name = row.itemName.description
        let generation = activity.writeGeneration(ino)
        let fd: Int32
        do { fd = try cache.open(ino, writable: false) } catch {
            throw SyncError(code: .cache, message: "cannot read local content of \(name)", cause: error)
        }
        defer { close(fd) }
        transfers.begin(ino, .upload, total: cache.status(fd: fd)?.size ?? 0)
        var failure: String? = "upload interrupted"
        defer { transfers.end(ino, error: failure) }
        let (blocks, size) = try await storeBlocks(ino, fd: fd, name: name)
        do {
            _ = try await OffloadedWork.run { () throws(SystemError) in try Syscall.check("fsync") { fsync(fd) } }
        } catch {
            throw SyncError(code: .cache, message: "cannot fsync local content of \(name)", cause: error)
        }
        failure = nil
        guard activity.writeGeneration(ino) == generation, let status = cache.status(fd: fd) else { return nil }
        return ContentUpload(blocks: blocks, size: size, mtime: status.mtime, writeGeneration: generation)
    }

    /// Reads and stores every block; the manifest in order and the bytes read.
    private func storeBlocks(_ ino: Inode, fd: Int32, name: String) async throws(SyncError) -> ([BlockReference], Int64) {
        var blocks: [BlockReference?] = []
        var offset: Int64 = 0
        var uploaded: Int64 = 0
        do {
            try await withThrowingTaskGroup(of: (Int, BlockReference).self) { group in
                var inFlight = 0
                func collect(_ finished: (Int, BlockReference)) {
                    blocks[finished.0] = finished.1
                    uploaded += finished.1.length
                    transfers.progress(ino, done: uploaded)
                    inFlight -= 1
                }
                while true {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "upload cancelled"))
                    let wanted = info.writtenBlockLength(index: blocks.count)
                    let bytes = try await readBlock(ino, fd: fd, count: wanted, at: offset, name: name)
                    if bytes.isEmpty { break }
                    if inFlight == parallelTransfers, let finished = try await group.next() { collect(finished) }
                    let index = blocks.count
                    blocks.append(nil)
                    group.addTask { (index, try await storeBlock(bytes, name: name)) }
                    inFlight += 1
                    offset += Int64(bytes.count)
                    if bytes.count < wanted { break }
                }
                while let finished = try await group.next() { collect(finished) }
            }
        } catch {
            throw SyncError.wrap(error, "cannot upload \(name)")
        }
        return (blocks.compactMap { $0 }, offset)
    }

    /// One block's bytes, read under a shared lease so a single write is never split.
    private func readBlock(_ ino: Inode, fd: Int32, count: Int, at offset: Int64, name: String) async throws(SyncError) -> [UInt8] {
        let leases: LeaseSet
        do {
            leases = try await coordinator.acquire([LeaseRequest(ino, .shared)], owner: "sync: upload")
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled while uploading", cause: error)
        }
        defer { leases.release() }
        do {
            return try await OffloadedWork.run { () throws(SystemError) in try Syscall.readFully(fd: fd, count: count, at: offset) }
        } catch {
            throw SyncError(code: .cache, message: "cannot read local content of \(name)", cause: error)
        }
    }

    /// Hashes the block and puts it unless the store has it already.
    private func storeBlock(_ bytes: [UInt8], name: String) async throws(SyncError) -> BlockReference {
        let hash = ContentHasher.sha256Hex(bytes)
        let key = ContainerLayout.blockKey(hash)
        try await calls.store("cannot upload \(name)") { store throws(StoreError) in
            if try await !store.exists(key) { try await store.put(key, bytes) }
        }
        return BlockReference(hash: hash, length: Int64(bytes.count))
    }
}
