import DeviceFixture
import Foundation
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// A program on a device that keeps a file open for writing across rounds and writes
/// nothing (a database, a logger between lines): another device's change to that file, or
/// a delete of it or of a folder above it, is held there for it alone, while everything
/// else keeps syncing both ways.
struct LongWriter {
    var ino: Inode
    var handle: UInt64
    var path: String
    /// It closes in this round, before its first sync pass (0) or after it (1).
    var closeRound: Int
    var closePass: Int
}

extension SoakBatch {
    /// Their own generator, so that a seed plays the same operations with or without them.
    func writerChoices() -> SplitMix64 {
        SplitMix64(seed: seed ^ 0x5EED_0F_0B5E ^ UInt64(round))
    }

    /// After the operations of a round, each device without one may start a long writer on
    /// one of its files, for this round up to the third after it (never past the last).
    func openWriters(_ stats: inout SoakStats) async {
        var choices = writerChoices()
        for index in devices.indices where writers[index] == nil && choices.chance(25) {
            let device = devices[index]
            guard let files = try? entries(device).filter({ $0.kind == .file }), let file = choices.pick(files) else { continue }
            let closeRound = min(round + choices.below(3), rounds)
            let closePass = closeRound == round ? 1 : choices.below(2)
            do {
                let handle = try await device.open(file.ino, flags: O_RDWR)
                writers[index] = LongWriter(ino: file.ino, handle: handle, path: file.path, closeRound: closeRound, closePass: closePass)
                history.append("  \(device.name): opens \(file.path) for writing until round \(closeRound) " + (closePass == 0 ? "before its sync" : "after its first sync pass"))
                stats.operations["long writer", default: 0] += 1
            } catch {
                // A placeholder that an offline device cannot download.
                history.append("  \(device.name): cannot open \(file.path) for writing: \(error)")
            }
        }
    }

    /// Closes the writers due at this point of the round: `pass` 0 before the first sync
    /// pass, 1 after it. A round without changes (devices reconnecting) closes them all.
    func closeWriters(pass: Int, roundHasChanges: Bool) {
        for (index, writer) in writers.sorted(by: { $0.key < $1.key }) {
            let due = !roundHasChanges || round > writer.closeRound || (round == writer.closeRound && pass >= writer.closePass)
            guard due else { continue }
            devices[index].core.release(handle: writer.handle)
            writers[index] = nil
            history.append("  \(devices[index].name): closes \(writer.path) (opened for writing)")
        }
    }

    /// The items that may differ between devices while changes are held, by the (online)
    /// device that holds them: each held item, the local changes that wait for them
    /// (`SyncEngine.heldBack`), and what is inside any of these folders there.
    func heldItems() async throws -> [Int: Set<String>] {
        var result: [Int: Set<String>] = [:]
        for index in online {
            let device = devices[index]
            let held = try await device.metadata.read { db in try HeldChanges.all(db) }.map(\.itemID.rawValue)
            guard !held.isEmpty else { continue }
            let waiting = try await device.engine.heldBack().map(\.rawValue)
            let all = try entries(device)
            for id in held + waiting {
                result[index, default: []].insert(id)
                guard let folder = all.first(where: { $0.id == id && $0.kind == .directory }) else { continue }
                result[index, default: []].formUnion(all.filter { $0.path.hasPrefix(folder.path + "/") }.map(\.id))
            }
        }
        return result
    }

    /// The local changes each online device holds back for a held change (`SyncEngine.heldBack`).
    func heldBackChanges() async throws -> [Int: Set<String>] {
        var result: [Int: Set<String>] = [:]
        for index in online {
            let waiting = try await devices[index].engine.heldBack().map(\.rawValue)
            if !waiting.isEmpty { result[index] = Set(waiting) }
        }
        return result
    }

    /// The files whose content this device changed and that a held change keeps back
    /// (`HeldScope`; among `waiting`, from `heldItems`): still not pushed at the end of the
    /// round, so still its pending edits in the next (`expectedCopies`, no lost write).
    func heldBackEdits(_ index: Int, among waiting: Set<String>) throws -> (ids: Set<String>, inodes: Set<Inode>) {
        guard !waiting.isEmpty else { return ([], []) }
        let rows = try devices[index].metadata.read { db in try ItemRow.fetchAll(db) }.filter { row in
            !row.deleted && row.itemKind == .file && row.dirtyFlags.contains(.content) && waiting.contains(row.itemID.rawValue)
        }
        return (Set(rows.map(\.itemID.rawValue)), Set(rows.map(\.inode)))
    }

    /// The ids of the folders above the items `ids` on `device` (the root excluded), from
    /// the rows (a link's row is its own, with its own folder).
    func foldersAbove(_ ids: Set<String>, on device: TestDevice) throws -> Set<String> {
        try device.metadata.read { db in
            var result: Set<String> = []
            for id in ids {
                var next = try ItemRow.find(id: ItemID(id), db)?.parent
                while let ino = next, ino != Inode.root, let folder = try ItemRow.find(ino: ino, db), result.count < 10_000 {
                    result.insert(folder.itemID.rawValue)
                    next = folder.parent
                }
            }
            return result
        }
    }

    /// The files whose held change is a new version: this device has not seen it, so an
    /// edit it makes before it is applied is a conflict (`expectedCopies`).
    func heldVersions(_ device: TestDevice) throws -> Set<String> {
        Set(try device.metadata.read { db in try HeldChanges.all(db) }.compactMap { change in
            if case .upsert(let item) = change.operation { item.id.rawValue } else { nil }
        })
    }
}
