import ContainerStore
import ContentCache
import FileCoordinator
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// Stores files' local content as blocks: many files at once (`upload(_ rows:)`), each
/// read from the cache in order, a block under a short shared lease (a write is never
/// split), hashed and put as `TransferGate` admits it. Over a far store the round trips of
/// many small files overlap instead of adding up; the gate bounds what is in memory.
struct ContentUploader: Sendable {
    let calls: SyncCalls
    let format: ContainerFormat
    let cache: ContentCache
    let coordinator: FileCoordinator
    let activity: any LocalActivity
    let transfers: TransferTable
    let gate: TransferGate
    let condemned: CondemnedObjects
    let cutting: BlockCutting
    let uncertain = UncertainBlocks()
    var reader: LocalContentReader { LocalContentReader(cache: cache, coordinator: coordinator) }

    /// A block this small is put without asking first whether the store has it: a put
    /// costs one round trip, as the question does, and a known block is simply rewritten
    /// with the same bytes. Larger blocks are checked first, to save sending them again,
    /// and so are blocks whose last put failed (`UncertainBlocks`).
    static let blindPutLimit = 256 << 10

    /// Uploads the content of these files, as many at once as the gate lets through; the
    /// manifest of each that did not change meanwhile. The first failure stops the rest.
    /// In a format-2 container small files go into packs (`PackUploader`).
    func upload(_ rows: [ItemRow]) async throws(SyncError) -> [Inode: ContentUpload] {
        guard format.current >= 2 else { return try await uploadEach(rows) }
        // The cache file's size: the row's may lag behind writes still open.
        let sized = rows.map { row in (row, cache.status(row.inode)?.size ?? row.size) }
        let small = sized.filter { $0.1 <= PackUploader.smallFile }
        let packer = PackUploader(calls: calls, reader: reader, activity: activity, gate: gate)
        var uploads = try await packer.upload(small)
        uploads.merge(try await uploadEach(sized.filter { $0.1 > PackUploader.smallFile }.map(\.0))) { _, new in new }
        return uploads
    }

    /// Each file's blocks as objects of their own.
    private func uploadEach(_ rows: [ItemRow]) async throws(SyncError) -> [Inode: ContentUpload] {
        var uploads: [Inode: ContentUpload] = [:]
        // Files open at once: enough to keep every transfer slot busy with small files.
        let width = gate.limits.transfers * 2
        do {
            try await withThrowingTaskGroup(of: (Inode, ContentUpload?).self) { group in
                var pending = rows[...]
                func startNext() {
                    guard let row = pending.popFirst() else { return }
                    group.addTask { (row.inode, try await upload(row)) }
                }
                for _ in 0..<width { startNext() }
                while let (ino, upload) = try await group.next() {
                    if let upload { uploads[ino] = upload }
                    startNext()
                }
            }
        } catch {
            throw SyncError.wrap(error, "cannot upload local changes")
        }
        return uploads
    }

    /// The manifest of the file's content now; nil if a write came in meanwhile (the next
    /// push reads it again). The cache file is fsynced first: what a commit marks clean
    /// must survive a power loss.
    func upload(_ row: ItemRow) async throws(SyncError) -> ContentUpload? {
        let ino = row.inode
        let name = row.itemName.description
        let generation = activity.writeGeneration(ino)
        let fd = try reader.open(ino, name: name)
        defer { close(fd) }
        // The committed version's blocks are stored: an edit sends only the others.
        let committed = try await calls.read("cannot read the committed content of \(name)") { db in try BaseSnapshots.find(row.itemID, db)?.blocks ?? [] }
        let known = Dictionary(committed.filter { $0.inline == nil }.map { ($0.hash, $0) }) { first, _ in first }
        transfers.begin(ino, .upload, total: cache.status(fd: fd)?.size ?? 0)
        var failure: String? = "upload interrupted"
        defer { transfers.end(ino, error: failure) }
        guard let (blocks, size) = try await storeBlocks(ino, fd: fd, name: name, known: known) else {
            failure = nil
            return nil
        }
        do {
            _ = try await OffloadedWork.run { () throws(SystemError) in try Syscall.check("fsync") { fsync(fd) } }
        } catch {
            throw SyncError(code: .cache, message: "cannot fsync local content of \(name)", cause: error)
        }
        failure = nil
        // Checked again after the reads: an open with O_TRUNC marks the change (the new
        // generation read above) before its writer counts, so the reads may have met the
        // file emptied for a write still to come. Never published half-written.
        guard activity.writeGeneration(ino) == generation, !activity.isBeingWritten(ino), let status = cache.status(fd: fd) else { return nil }
        return ContentUpload(blocks: blocks, size: size, mtime: status.mtime, writeGeneration: generation)
    }

    /// Reads and stores every block (`BlockSource`); the manifest in order and the bytes
    /// read, or nil if the file was deleted meanwhile. A block read waits for the gate to
    /// admit its transfer before the next is read, so the gate bounds the bytes in memory.
    private func storeBlocks(_ ino: Inode, fd: Int32, name: String, known: [String: BlockReference]) async throws(SyncError) -> ([BlockReference], Int64)? {
        var blocks: [BlockReference?] = []
        var source = BlockSource(reader: reader, ino: ino, fd: fd, name: name, cutting: cutting)
        var (offset, deleted) = (Int64(0), false)
        let failed = FailureFlag()
        do {
            try await withThrowingTaskGroup(of: (Int, BlockReference).self) { group in
                // A failed block stops the reading: the group's next result is its error.
                reading: while !failed.isSet {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "upload cancelled"))
                    let bytes: [UInt8]
                    switch try await source.next() {
                    case .block(let block): bytes = block
                    case .end: break reading
                    case .deleted:
                        deleted = true
                        break reading
                    }
                    let ticket = try await gate.admit(bytes: Int64(bytes.count))
                    let index = blocks.count
                    blocks.append(nil)
                    group.addTask {
                        do {
                            let block = try await storeBlock(bytes, name: name, ticket: ticket, known: known)
                            transfers.advance(ino, by: block.length)
                            return (index, block)
                        } catch {
                            failed.set()
                            throw error
                        }
                    }
                    offset += Int64(bytes.count)
                }
                while let (index, block) = try await group.next() { blocks[index] = block }
            }
        } catch {
            throw SyncError.wrap(error, "cannot upload \(name)")
        }
        return deleted ? nil : (blocks.compactMap { $0 }, offset)
    }

    /// Stores bytes held in memory as blocks, one after another (an edit kept for a merge
    /// whose objects a collector condemned before its record: `SyncEngine.inputsKeptSafe`).
    func store(_ bytes: [UInt8], name: String) async throws(SyncError) -> [BlockReference] {
        var blocks: [BlockReference] = []
        var start = 0
        for end in cutting.cuts(of: bytes) {
            let ticket = try await gate.admit(bytes: Int64(end - start))
            blocks.append(try await storeBlock(Array(bytes[start..<end]), name: name, ticket: ticket))
            start = end
        }
        return blocks
    }

    /// Hashes the block and puts it (a large one unless the store has it already), in the
    /// turn `ticket` was given; one of `known` (the committed version's, by name) is named
    /// where it is, with no request, unless a collector condemned it.
    private func storeBlock(_ bytes: [UInt8], name: String, ticket: TransferGate.Ticket, known: [String: BlockReference] = [:]) async throws(SyncError) -> BlockReference {
        do throws(SyncError) {
            let codec = calls.codec
            let hash = await OffloadedWork.run { codec.name(of: bytes) }
            if let reference = known[hash], reference.length == Int64(bytes.count), let key = ContainerLayout.objectKey(of: reference), !condemned.contains(key) {
                ticket.finish(completed: true, moved: 0)
                return reference
            }
            if format.current >= 2 && condemned.contains(ContainerLayout.blockKey(hash)) {
                return try await storeAnew(bytes, hash: hash, name: name, ticket: ticket)
            }
            let key = ContainerLayout.blockKey(hash)
            let askFirst = bytes.count > Self.blindPutLimit || uncertain.contains(hash)
            let stored = askFirst ? try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.exists(key) } : false
            if !stored {
                try await ticket.pace(Int64(bytes.count))
                do {
                    try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.put(key, bytes) }
                } catch {
                    uncertain.insert(hash)
                    throw error
                }
            }
            if askFirst { uncertain.remove(hash) }
            ticket.finish(completed: true, moved: stored ? 0 : Int64(bytes.count))
            return BlockReference(hash: hash, length: Int64(bytes.count))
        } catch {
            ticket.finish(completed: false)
            throw error
        }
    }

    /// A block whose object a collector condemned goes to a pack of its own (a fresh key):
    /// a put of the condemned key could be deleted by the sweep right after.
    private func storeAnew(_ bytes: [UInt8], hash: String, name: String, ticket: TransferGate.Ticket) async throws(SyncError) -> BlockReference {
        let pack = ItemID.random().rawValue
        let sealed = try calls.codec.packed(bytes, name: hash)
        try await ticket.pace(Int64(sealed.count))
        try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.put(ContainerLayout.packKey(pack), sealed) }
        ticket.finish(completed: true, moved: Int64(sealed.count))
        return BlockReference(hash: hash, length: Int64(bytes.count), pack: pack, offset: 0, stored: sealed.count == bytes.count ? nil : Int64(sealed.count))
    }
}
