import ContainerStore
import ContentCache
import Foundation
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// Uploads small files (one leading block, 256 KiB at most) of a format-2 container
/// together: their bytes are packed into objects of up to `packLimit`, one `PUT` each,
/// and each file's manifest names its place in its pack. Over a far store, a thousand
/// small files then cost a few round trips instead of a thousand. Tiny files (1 KiB at
/// most) cost none: their bytes travel inside the record. A pack is admitted by the upload
/// gate before it is filled, so the gate bounds the packs in memory.
struct PackUploader: Sendable {
    let calls: SyncCalls
    let reader: LocalContentReader
    let activity: any LocalActivity
    let gate: TransferGate

    static let packLimit = 8 << 20
    /// Files up to this size are packed: one leading block (`ContainerInfo`).
    static let smallFile = ContainerInfo.leadingBlockSize

    /// A small file's content, read whole, and what the commit needs of it.
    private struct SmallFile {
        var ino: Inode
        var bytes: [UInt8]
        var mtime: Int64
        var generation: UInt64
    }

    /// A pack being filled: one buffer, and each file's block in it (or inline).
    private struct Pack {
        let id = ItemID.random().rawValue
        var bytes: [UInt8] = []
        /// Bytes held for this pack, inline ones included: what the gate admitted.
        var held = 0
        var files: [(ino: Inode, block: BlockReference?, mtime: Int64, generation: UInt64)] = []

        /// The file's block, inline or packed (sealed alone in an encrypted container).
        mutating func append(_ file: SmallFile, _ codec: ContentCodec) async throws(SyncError) {
            held += file.bytes.count
            guard !file.bytes.isEmpty else { return files.append((file.ino, nil, file.mtime, file.generation)) }
            let length = Int64(file.bytes.count)
            let inline = file.bytes.count <= BlockReference.inlineLimit
            let (hash, stored) = try await OffloadedWork.run { [bytes = file.bytes] () throws(SyncError) -> (String, [UInt8]) in
                let hash = codec.name(of: bytes)
                return (hash, inline ? [] : try codec.packed(bytes, name: hash))
            }
            let block = inline
                ? BlockReference(hash: hash, length: length, inline: Data(file.bytes))
                : BlockReference(
                    hash: hash, length: length, pack: id, offset: Int64(bytes.count), stored: stored.count == file.bytes.count ? nil : Int64(stored.count)
                )
            bytes += stored
            files.append((file.ino, block, file.mtime, file.generation))
        }

        var uploads: [Inode: ContentUpload] {
            var uploads: [Inode: ContentUpload] = [:]
            for file in files {
                uploads[file.ino] = ContentUpload(blocks: file.block.map { [$0] } ?? [], size: file.block?.length ?? 0, mtime: file.mtime, writeGeneration: file.generation)
            }
            return uploads
        }
    }

    /// The manifests of the files that did not change while being read. The first
    /// failure stops the rest (a pack that landed before it is left unnamed).
    /// `files`: the rows and their content's size now.
    func upload(_ files: [(ItemRow, Int64)]) async throws(SyncError) -> [Inode: ContentUpload] {
        var uploads: [Inode: ContentUpload] = [:]
        var pending = files[...]
        let failed = FailureFlag()
        do {
            try await withThrowingTaskGroup(of: [Inode: ContentUpload].self) { group in
                // A failed pack stops the reading: the group's next result is its error.
                while !pending.isEmpty && !failed.isSet {
                    let ticket = try await gate.admit(bytes: Int64(Self.packLimit + Int(Self.smallFile)))
                    var pack = Pack()
                    do {
                        while let (row, size) = pending.first, pack.held + Int(size) <= Self.packLimit || pack.files.isEmpty {
                            pending.removeFirst()
                            guard let file = try await read(row) else { continue }
                            try await pack.append(file, calls.codec)
                        }
                    } catch {
                        ticket.finish(completed: false)
                        throw error
                    }
                    let filled = pack
                    group.addTask {
                        do { return try await store(filled, ticket: ticket) } catch {
                            failed.set()
                            throw error
                        }
                    }
                }
                while let done = try await group.next() { uploads.merge(done) { _, new in new } }
            }
        } catch {
            throw SyncError.wrap(error, "cannot upload local changes")
        }
        return uploads
    }

    /// Puts one pack (none for empty files alone) and returns each file's manifest.
    private func store(_ pack: Pack, ticket: TransferGate.Ticket) async throws(SyncError) -> [Inode: ContentUpload] {
        do throws(SyncError) {
            if !pack.bytes.isEmpty {
                try await ticket.pace(Int64(pack.bytes.count))
                try await calls.store("cannot upload a pack of \(pack.files.count) small files") { store throws(StoreError) in
                    try await store.put(ContainerLayout.packKey(pack.id), pack.bytes)
                }
            }
            ticket.finish(completed: !pack.bytes.isEmpty, moved: Int64(pack.bytes.count))
            return pack.uploads
        } catch {
            ticket.finish(completed: false)
            throw error
        }
    }

    /// The file's whole content, read under a shared lease and made durable (what a commit
    /// marks clean must survive a power loss); nil if it was written or deleted meanwhile,
    /// or is no longer small (the next push takes it as it is then).
    private func read(_ row: ItemRow) async throws(SyncError) -> SmallFile? {
        let ino = row.inode
        let name = row.itemName.description
        let generation = activity.writeGeneration(ino)
        let fd = try reader.open(ino, name: name)
        defer { close(fd) }
        guard let bytes = try await reader.read(ino, fd: fd, count: Int(Self.smallFile) + 1, at: 0, name: name, sync: true),
              bytes.count <= Self.smallFile, activity.writeGeneration(ino) == generation, !activity.isBeingWritten(ino),
              let status = reader.cache.status(fd: fd) else { return nil }  // as in `ContentUploader`
        return SmallFile(ino: ino, bytes: bytes, mtime: status.mtime, generation: generation)
    }
}
