import ContentCache
import FileCoordinator
import Foundation
import Inodes
import ItemModel
import MetadataStore
import SyncEngine

/// Earlier versions of a file (`ubiqfs versions`, `ubiqfs restore`). A restore is a local
/// edit like any other: the old content becomes the file's content here, under an
/// exclusive lease, and is pushed as a new version; history is never rewritten.
extension FileSystemCore {
    /// The item at a path inside the mount ("/a/b"), without counting a kernel lookup.
    public func resolve(_ path: String) throws(FileSystemError) -> Inode {
        try resolve(bytes: Array(path.utf8))
    }

    /// The same for a path in bytes (a name need not be UTF-8).
    public func resolve(bytes path: [UInt8]) throws(FileSystemError) -> Inode {
        var ino = Inode.root
        for part in path.split(separator: UInt8(ascii: "/")) {
            let name = ByteString(Array(part))
            let parent = ino
            guard let child = try read({ db in try ItemRow.resolvedChild(of: parent, named: name, db) }) else {
                throw FileSystemError(.notFound, "\(ByteString(path)) does not exist")
            }
            ino = child.inode
        }
        return ino
    }

    /// Newest first; `current` is the version this device's content is (nil while a local
    /// edit is not committed yet).
    public func versions(_ ino: Inode) throws(FileSystemError) -> (versions: [FileVersion], current: UInt64?) {
        let row = try row(ino)
        guard row.itemKind == .file, !row.deleted else { throw FileSystemError(.invalid, "only files have versions") }
        let versions = try read { db in try FileVersions.list(row.itemID, db) }
        let current = row.dirtyFlags.contains(.content) ? nil : versions.first { $0.input == 0 && $0.blocks.sameContent(as: row.blockList) }?.seq
        return (versions, current)
    }

    /// `input` > 0: the edit a merge took in, version `seq.input`.
    public func restore(_ ino: Inode, version seq: UInt64, input: Int = 0) async throws(FileSystemError) {
        let row = try row(ino)
        guard row.itemKind == .file, !row.deleted else { throw FileSystemError(.invalid, "only files have versions") }
        guard let version = try read({ db in try FileVersions.find(row.itemID, seq: seq, input: input, db) }) else {
            throw FileSystemError(.notFound, "\(row.itemName) has no version \(input == 0 ? String(seq) : "\(seq).\(input)"); `ubiqfs versions` lists them")
        }
        let temporary: TemporaryCacheFile
        do throws(SyncError) {
            temporary = try await downloads.fetchVersion(version.blocks, of: row.itemName.description)
        } catch {
            throw FileSystemError(error.code == .unreachable ? .unreachable : .io, "cannot download version \(seq) of \(row.itemName)", cause: error)
        }
        let leases: LeaseSet
        do {
            leases = try await coordinator.acquire([LeaseRequest(ino, .exclusive)], owner: "restore")
        } catch {
            cache.discard(temporary)
            throw FileSystemError(.interrupted, "restore cancelled", cause: error)
        }
        defer { leases.release() }
        guard !handles.hasWriters(ino) else {
            cache.discard(temporary)
            throw FileSystemError(.busy, "\(row.itemName) is open for writing; close it first")
        }
        let now = Timestamp.now()
        do {
            // No power cut may leave the new bytes under a row that names others: local
            // content is marked changed and a fill's blocks forgotten, durably, first (a
            // placeholder's cache file means nothing until its row says it is here).
            try await OffloadedWork.run { () throws(FileSystemError) in
                switch try self.row(ino).contentState {
                case .local: try self.noteContentChange(ino, .unknown)
                case .partial: try self.forgetFillDurably(ino)
                case .placeholder: break
                }
            }
            try await cache.installDurably(temporary, as: ino, mtime: now)
        } catch {
            cache.discard(temporary)
            throw Self.wrap(error)
        }
        _ = handles.noteWrite(ino, .unknown)
        do {
            try await metadata.write { db in
                guard var current = try ItemRow.find(ino: ino, db) else { return }
                current.contentState = .local
                current.size = version.size
                current.mtime = now
                current.markChanged(.content, now: now)
                try current.update(db)
            }
        } catch {
            handles.unmarkDirty(ino)
            throw Self.wrap(error)
        }
        notifier.invalidate([.inode(ino, data: true)])
        sync.localChange()
        emit(.modified, ino, detail: "restored version \(seq)")
    }
}
