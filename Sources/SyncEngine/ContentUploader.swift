import ContainerStore
import ContentCache
import FileCoordinator
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// Stores files' local content as blocks: many files at once (`upload(_ rows:)`), each
/// read from the cache in order, a block under a short shared lease (a write is never
/// split) and hashed. A block the store has is named where it is (the committed version's,
/// or another file's by `ChunkIndex`); the others go into packs of about 8 MiB
/// (`ChunkPack`), one `PUT` each, as `TransferGate` admits them. Over a far store the round
/// trips of many small files overlap instead of adding up; the gate bounds what is in memory.
struct ContentUploader: Sendable {
    let calls: SyncCalls
    let format: ContainerFormat
    let cache: ContentCache
    let coordinator: FileCoordinator
    let activity: any LocalActivity
    let transfers: TransferTable
    let gate: TransferGate
    let condemned: CondemnedObjects
    let cuttings: FileCuttings
    /// Bytes of local content read for uploads, in all.
    let bytesRead = ByteCounter()
    var reader: LocalContentReader { LocalContentReader(cache: cache, coordinator: coordinator) }

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
        let expected = cache.status(fd: fd)?.size ?? 0
        transfers.begin(ino, .upload, total: expected)
        var failure: String? = "upload interrupted"
        defer { transfers.end(ino, error: failure) }
        // The writes followed since the committed version, read once: both the cutting and
        // the reads around the edits go by the same ones.
        let written = activity.writtenRanges(ino).flatMap { $0.base == WrittenRanges.base(of: committed) ? $0 : nil }
        let cutting = try await cutting(row, fd: fd, committed: committed, written: written, size: expected)
        let next = try await blockSteps(row, fd: fd, committed: committed, written: written, expected: expected, cutting: cutting)
        guard let (blocks, size, reused) = try await storeBlocks(ino, name: name, known: known, expected: expected, next) else {
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
        return ContentUpload(blocks: blocks, size: size, mtime: status.mtime, writeGeneration: generation, reused: reused)
    }

    /// How the file is cut (`FileCuttings`): by its first bytes, its committed list and
    /// whether a write here ended inside that content.
    private func cutting(
        _ row: ItemRow, fd: Int32, committed: [BlockReference], written: WrittenRanges?, size: Int64
    ) async throws(SyncError) -> BlockCutting {
        guard cuttings.fine != nil, format.current >= 5 else { return cuttings.coarse }
        let head = try await reader.read(row.inode, fd: fd, count: FileCuttings.sqliteHeader.count, at: 0, name: row.itemName.description) ?? []
        return cuttings.cutting(size: size, head: head, committed: committed, editedInPlace: written?.editsInPlace ?? false, format: format.current)
    }

    /// The file's blocks one after another: only around what was written since the
    /// committed version when the writes were followed and the committed blocks were cut
    /// as `cutting` cuts (`IncrementalCutting`), else the whole file read (`BlockSource`).
    /// Counts what it reads (`bytesRead`).
    private func blockSteps(
        _ row: ItemRow, fd: Int32, committed: [BlockReference], written: WrittenRanges?, expected: Int64, cutting: BlockCutting
    ) async throws(SyncError) -> () async throws(SyncError) -> BlockSource.Step {
        let (ino, name, reader, counter) = (row.inode, row.itemName.description, reader, bytesRead)
        let read = { (range: Range<Int>) async throws(SyncError) -> [UInt8]? in
            let bytes = try await reader.read(ino, fd: fd, count: range.count, at: Int64(range.lowerBound), name: name)
            counter.add(bytes?.count ?? 0)
            return bytes
        }
        if let written, cuttings.isFine(committed) == (cutting == cuttings.fine),
           let (pieces, windows) = try await IncrementalCutting(cutting: cutting).pieces(
               committed: committed, edits: written.edits(newLength: expected), newLength: Int(expected), read: read) {
            var remaining = pieces[...]
            let condemned = self.condemned
            return { () async throws(SyncError) -> BlockSource.Step in
                guard let piece = remaining.popFirst() else { return .end }
                // A kept block whose object a collector condemned is read and stored anew.
                if let block = piece.kept, ContainerLayout.objectKey(of: block).map(condemned.contains) != true { return .stored(block) }
                if let bytes = windows.bytes(piece.range) { return .block(bytes) }
                guard let bytes = try await read(piece.range) else { return .deleted }
                return bytes.count == piece.range.count ? .block(bytes) : .deleted
            }
        }
        var source = BlockSource(reader: reader, ino: ino, fd: fd, name: name, cutting: cutting)
        return { () async throws(SyncError) -> BlockSource.Step in
            let step = try await source.next()
            if case .block(let bytes) = step { counter.add(bytes.count) }
            return step
        }
    }

    /// Stores bytes held in memory as blocks, all under fresh keys (an edit kept for a
    /// merge whose objects a collector condemned before its record: rule W4).
    func store(_ bytes: [UInt8], name: String) async throws(SyncError) -> [BlockReference] {
        let cutting = cuttings.cutting(
            size: Int64(bytes.count), head: Array(bytes.prefix(FileCuttings.sqliteHeader.count)), committed: [], editedInPlace: false, format: format.current
        )
        var ends = cutting.cuts(of: bytes)[...]
        var start = 0
        let next = { () async throws(SyncError) -> BlockSource.Step in
            guard let end = ends.popFirst() else { return .end }
            defer { start = end }
            return .block(Array(bytes[start..<end]))
        }
        return try await storeBlocks(nil, name: name, known: [:], expected: Int64(bytes.count), reuse: false, next)?.blocks ?? []
    }

    /// A pack being filled, and the gate's admission for its bytes.
    private typealias OpenPack = (pack: ChunkPack, ticket: TransferGate.Ticket)

    /// Stores every block `next` hands out: the manifest in order, the bytes, and the objects
    /// named that this push did not write and the committed version does not name (rule W3
    /// asks the store about them before the record); nil if the file was deleted meanwhile.
    /// Packs are put as they fill, while the next fills (`place`).
    private func storeBlocks(
        _ ino: Inode?, name: String, known: [String: BlockReference], expected: Int64, reuse: Bool = true, _ next: () async throws(SyncError) -> BlockSource.Step
    ) async throws(SyncError) -> (blocks: [BlockReference], size: Int64, reused: Set<String>)? {
        var manifest = UploadManifest(known: known)
        var deleted = false
        var filling: OpenPack?
        let failed = FailureFlag()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                defer { filling?.ticket.finish(completed: false) }
                // A failed pack stops the reading: the group's next result is its error.
                reading: while !failed.isSet {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "upload cancelled"))
                    switch try await next() {
                    case .stored(let block):
                        manifest.append(block)
                        if let ino { transfers.advance(ino, by: block.length) }
                    case .block(let bytes):
                        let full = try await place(bytes, in: &manifest, filling: &filling, expected: expected, reuse: reuse, ino: ino, name: name)
                        guard let (pack, ticket) = full else { continue }
                        group.addTask {
                            do { try await put(pack, ticket: ticket, of: ino, name: name) } catch {
                                failed.set()
                                throw error
                            }
                        }
                    case .end: break reading
                    case .deleted:
                        deleted = true
                        break reading
                    }
                }
                if let (pack, ticket) = filling, !failed.isSet && !deleted {
                    filling = nil
                    try await put(pack, ticket: ticket, of: ino, name: name)
                }
                try await group.waitForAll()
            }
        } catch {
            throw SyncError.wrap(error, "cannot upload \(name)")
        }
        return deleted ? nil : (manifest.blocks, manifest.offset, manifest.reused)
    }

    /// Names `bytes` next in `manifest`: where the store has them (`known` by name, then
    /// `ChunkIndex` if `reuse`) unless a collector condemned that object, else sealed into
    /// the pack `filling`, admitted by the gate before it is filled. Returns that pack once
    /// it is full or holds the file's last bytes, for the caller to put.
    private func place(
        _ bytes: [UInt8], in manifest: inout UploadManifest, filling: inout OpenPack?, expected: Int64, reuse: Bool, ino: Inode?, name: String
    ) async throws(SyncError) -> OpenPack? {
        let codec = calls.codec
        let hash = await OffloadedWork.run { codec.name(of: bytes) }
        if let found = try await stored(hash, length: bytes.count, placed: manifest.placed, reuse: reuse) {
            manifest.append(found.block, reusedObject: found.indexed ? ContainerLayout.objectKey(of: found.block) : nil)
            if let ino { transfers.advance(ino, by: found.block.length) }
            return nil
        }
        guard format.current >= 2 else {
            manifest.append(try await putObject(bytes, hash: hash, name: name))
            if let ino { transfers.advance(ino, by: Int64(bytes.count)) }
            return nil
        }
        if filling == nil {
            // The pack's bytes: up to the limit and a block more, or what is left of the file.
            let left = max(expected - manifest.offset, Int64(bytes.count))
            let bound = min(Int64(ChunkPack.limit + max(cuttings.coarse.chunking.maximum, bytes.count)), left) + 64 << 10
            filling = (ChunkPack(), try await gate.admit(bytes: bound))
        }
        let sealed = try await OffloadedWork.run { () throws(SyncError) in try codec.packed(bytes, name: hash) }
        manifest.append(filling!.pack.append(sealed, hash: hash, length: bytes.count))
        guard filling!.pack.isFull || manifest.offset >= expected else { return nil }
        let full = filling
        filling = nil
        return full
    }

    /// Where the store has the block `hash` of `length` bytes already, if this upload may
    /// name it: one of `placed` (the committed version's, or this upload's), else, with
    /// `reuse`, where `ChunkIndex` last saw it (`indexed`). A place a collector condemned
    /// is not used, and the index forgets it.
    private func stored(_ hash: String, length: Int, placed: [String: BlockReference], reuse: Bool) async throws(SyncError) -> (block: BlockReference, indexed: Bool)? {
        if let block = placed[hash], block.length == Int64(length), let key = ContainerLayout.objectKey(of: block), !condemned.contains(key) {
            return (block, false)
        }
        guard reuse, let block = try await calls.read("cannot read the chunk index", { db in try ChunkIndex.find(hash, length: Int64(length), db) }),
              let key = ContainerLayout.objectKey(of: block) else { return nil }
        guard !condemned.contains(key) else {
            _ = try await calls.write("cannot update the chunk index") { db in try ChunkIndex.forget(objects: [key], db) }
            return nil
        }
        return (block, true)
    }

    /// A format-1 container has no packs: the block is its own object, put unless the
    /// store has it.
    private func putObject(_ bytes: [UInt8], hash: String, name: String) async throws(SyncError) -> BlockReference {
        let key = ContainerLayout.blockKey(hash)
        try await gate.run(bytes: Int64(bytes.count)) { () throws(SyncError) in
            let stored = try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.exists(key) }
            if !stored { try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.put(key, bytes) } }
        }
        return BlockReference(hash: hash, length: Int64(bytes.count))
    }

    /// Puts a filled pack in the turn `ticket` was given.
    private func put(_ pack: ChunkPack, ticket: TransferGate.Ticket, of ino: Inode?, name: String) async throws(SyncError) {
        do throws(SyncError) {
            try await ticket.pace(Int64(pack.bytes.count))
            try await calls.store("cannot upload \(name)") { store throws(StoreError) in try await store.put(ContainerLayout.packKey(pack.id), pack.bytes) }
            ticket.finish(completed: true, moved: Int64(pack.bytes.count))
            if let ino { transfers.advance(ino, by: pack.content) }
        } catch {
            ticket.finish(completed: false)
            throw error
        }
    }
}
