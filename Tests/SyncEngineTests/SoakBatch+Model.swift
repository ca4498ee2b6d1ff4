import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import GRDB
import Glibc
import Inodes
import ItemModel
import MetadataStore
@testable import SyncEngine
import Synchronization
import Testing

/// What the test expects of the tree, and the trees the devices show.
extension SoakBatch {
    // MARK: The model

    /// The content of every file this device wrote since its last sync and still has.
    /// A write that left a committed file's content as it was committed (a truncate of an
    /// empty file) is no edit: a concurrent real edit elsewhere may replace it, no copy kept.
    func writtenContent(_ index: Int) throws -> [(content: String, origin: String, id: String)] {
        let device = devices[index]
        let info = device.engine.info
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        return try entries(device).filter { $0.kind == .file && models[index].writtenInodes.contains($0.ino) }.compactMap { entry in
            let bytes = try #require(FileManager.default.contents(atPath: device.cache.path(for: entry.ino)), "\(device.name):\(entry.path) written but has no cache file")
            if let row = byIno[entry.ino], row.baseSeq > 0, try Self.blocks(Array(bytes), info: info, like: row.blockList).sameContent(as: row.blockList) { return nil }
            return (String(decoding: bytes, as: UTF8.self), "\(device.name):\(entry.path) (written by round \(round))", entry.id)
        }
    }

    /// A known file whose content this device changed and still has: whether the content
    /// differs from the committed one (a truncate to the same size does not), and its hash.
    typealias PendingEdit = (id: String, real: Bool, hash: String)

    /// The known files whose content this device changed and still has (`PendingEdit`).
    func pendingEdits(_ index: Int) throws -> [PendingEdit] {
        let device = devices[index]
        let info = device.engine.info
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let live = Dictionary(rows.filter { !$0.deleted && $0.itemKind == .file }.map { ($0.itemID.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        var result: [PendingEdit] = []
        for id in models[index].contentEdits.sorted() where models[index].known.contains(id) {
            guard let row = live[id] else { continue }
            if !row.dirtyFlags.contains(.content) {
                fail("\(device.name): \(row.itemName) was changed here but its content is not marked for upload (dirty \(row.dirtyFlags.rawValue))")
            }
            let bytes = try #require(FileManager.default.contents(atPath: device.cache.path(for: row.inode)), "\(device.name): no cache file for changed \(row.itemName)")
            result.append((id, try !Self.blocks(Array(bytes), info: info, like: row.blockList).sameContent(as: row.blockList), ContentHasher.sha256Hex(Array(bytes))))
        }
        return result
    }

    /// The blocks a plain container stores for `bytes`, cut as `committed` was (fine or
    /// coarse: `FileCuttings`), so the same content gives the same list.
    static func blocks(_ bytes: [UInt8], info: ContainerInfo, like committed: [BlockReference]) throws -> [BlockReference] {
        let cuttings = try FileCuttings(info: info, cipher: nil)
        let cutting = cuttings.isFine(committed) ? cuttings.fine ?? cuttings.coarse : cuttings.coarse
        var start = 0
        return cutting.cuts(of: bytes).map { end in
            defer { start = end }
            return BlockReference(hash: ContentHasher.sha256Hex(Array(bytes[start..<end])), length: Int64(end - start))
        }
    }

    /// The conflict copies this sync must make. A device's changed content becomes a copy
    /// when, at its pull, the journal holds a content change of that file it has not
    /// seen: one committed while it was offline (`unseen`), or one pushed earlier in this
    /// sync. Devices sync one after another, so in the first pass each one pulls every
    /// earlier push and pushes its own; later passes change nothing of this. A change that
    /// leaves the committed blocks as they were (a truncate to the same size) can lose but
    /// never makes others lose, since their pull sees no content change. This counts the
    /// copies exactly for this test's operations: content edits only happen through the
    /// operations above, each device syncs alone, and the offline store fails every call
    /// before it reaches the store (no half-done commit). Exactly, but for edits of files
    /// with a version held for a long writer (`maybeUnseen`): each of those is a range.
    func expectedCopies(pending: [Int: [PendingEdit]], order: [Int]) -> ClosedRange<Int> {
        var changed: [String: String] = [:]
        var maybeChanged: Set<String> = []
        var (copies, maybeCopies) = (0, 0)
        for index in order {
            for (id, real, hash) in pending[index] ?? [] {
                if models[index].maybeUnseen.contains(id) {
                    // A version is held here: every later change to the file is held too
                    // and replaces it (the newest wins), so a later delete, which the edit
                    // outlives, still leaves no copy.
                    maybeCopies += 1
                    maybeChanged.insert(id)
                } else if merging && changed[id] == hash {
                    // The same content as the version it meets: merged (both sides alike).
                    continue
                } else if changed[id] != nil {
                    copies += 1
                } else if models[index].unseen.contains(id) {
                    // With merging, a copy unless both sides are alike (not known here).
                    if merging { maybeCopies += 1 } else { copies += 1 }
                } else if maybeChanged.contains(id) {
                    // A copy, or else a change of the item itself.
                    maybeCopies += 1
                    maybeChanged.insert(id)
                } else if real {
                    changed[id] = hash
                }
            }
        }
        for index in devices.indices where models[index].offline {
            models[index].unseen.formUnion(changed.keys)
            models[index].maybeUnseen.formUnion(maybeChanged)
        }
        return copies...(copies + maybeCopies)
    }

    // MARK: Trees

    func entries(_ device: TestDevice) throws -> [Entry] {
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let ids = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0.itemID.rawValue) })
        var result: [Entry] = []
        func walk(_ ino: Inode, _ prefix: String) throws {
            for child in try device.core.list(ino, after: 2, limit: 100_000) {
                let path = prefix + String(decoding: child.name, as: UTF8.self)
                // A link lists its item's attributes; its own row is the one the offset names.
                let id = ids[child.attributes.ino] ?? "?"
                result.append(Entry(
                    path: path, ino: child.attributes.ino, kind: child.attributes.kind, mode: child.attributes.permissions,
                    id: id, names: child.attributes.kind == .directory ? 1 : child.attributes.nlink,
                    nameID: ids[Inode(child.nextOffset - 2)] ?? id
                ))
                if child.attributes.kind == .directory { try walk(child.attributes.ino, path + "/") }
            }
        }
        try walk(Inode.root, "")
        return result.sorted { $0.path < $1.path }
    }

    /// `leavingOut`: held items (`heldItems`), left out by the item's id or by the name's
    /// own id. A link that waits (`HeldScope`) is a name of an item that may not be held:
    /// that name is left out, and not counted in the item's names either.
    func snapshot(_ device: TestDevice, leavingOut held: Set<String> = []) throws -> [String: Node] {
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        var result: [String: Node] = [:]
        let all = try entries(device)
        let heldNames = Dictionary(all.filter { held.contains($0.nameID) && !held.contains($0.id) }.map { ($0.ino, UInt32(1)) }, uniquingKeysWith: +)
        for entry in all where !held.contains(entry.id) && !held.contains(entry.nameID) {
            let row = try #require(byIno[entry.ino])
            var xattrs: [String: [UInt8]] = [:]
            for name in try device.core.listXattrs(entry.ino).split(separator: 0) {
                xattrs[String(decoding: name, as: UTF8.self)] = try device.core.getXattr(entry.ino, name: Array(name))
            }
            let target = entry.kind == .symlink ? String(decoding: try device.core.readlink(entry.ino), as: UTF8.self) : nil
            result[entry.path] = Node(
                kind: entry.kind, id: entry.id, mode: entry.mode, xattrs: xattrs, target: target,
                size: entry.kind == .file ? row.size : 0, blocks: entry.kind == .file ? row.blockList : [],
                folderTime: entry.kind == .directory ? row.mtime : 0, names: entry.names - (heldNames[entry.ino] ?? 0)
            )
        }
        return result
    }

    /// Every item id the store's checkpoints and journal name.
    func committedIDs() async -> Set<String> {
        var ids: Set<String> = []
        for key in (try? await store.listAll(prefix: ContainerLayout.checkpointPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let checkpoint = try? RecordCodec.decode(Checkpoint.self, from: bytes) else { continue }
            ids.formUnion(checkpoint.items.map(\.id.rawValue))
        }
        for key in (try? await store.listAll(prefix: ContainerLayout.journalPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let record = try? RecordCodec.decode(JournalRecord.self, from: bytes) else { continue }
            ids.formUnion(record.ops.map(\.itemID.rawValue))
        }
        return ids
    }

    func allIDs(_ device: TestDevice) throws -> Set<String> {
        Set(try device.metadata.read { db in try String.fetchAll(db, sql: "SELECT id FROM item") })
    }

    func liveIDs(_ device: TestDevice) throws -> Set<String> {
        Set(try device.metadata.read { db in try String.fetchAll(db, sql: "SELECT id FROM item WHERE deleted = 0 AND ino != ?", arguments: [Inode.root]) })
    }

    func localFileInodes(_ device: TestDevice) throws -> Set<Inode> {
        Set(try device.metadata.read { db in
            try Inode.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 0 AND kind = 'file' AND content = ?", arguments: [ContentState.local.rawValue])
        })
    }

    func forgetAll(_ device: TestDevice) throws {
        for ino in try device.metadata.read({ db in try Inode.fetchAll(db, sql: "SELECT ino FROM item") }) {
            device.core.forget(ino, count: .max)
        }
    }
}
