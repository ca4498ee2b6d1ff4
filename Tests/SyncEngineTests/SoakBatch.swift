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
import SeaweedFSFixture
import SyncEngine
import Synchronization
import Testing

// MARK: - One batch

/// What the test knows about one device, from the operations it made.
struct DeviceModel {
    var offline = false
    /// Item ids this device had after its last sync: committed, known to every device.
    var known: Set<String> = []
    /// Inodes whose content this device wrote since its last sync (lost-write check).
    var writtenInodes: Set<Inode> = []
    /// Ids of known files whose content this device changed since its last sync.
    var contentEdits: Set<String> = []
    /// Ids of files whose content other devices committed since this device's last sync.
    var unseen: Set<String> = []
    /// Ids of files with a new version held here for a long writer: an edit made before it
    /// lands is a conflict copy, unless a later delete replaced it (then the edit keeps the
    /// item: no copy), so the count is a range.
    var maybeUnseen: Set<String> = []
}

/// One item of a device's tree.
struct Entry {
    var path: String
    var ino: Inode
    var kind: ItemKind
    var mode: UInt32
    var id: String
    /// The item's names (hard links): the entry is one of them.
    var names: UInt32 = 1
    /// The row that holds this name: a link's own id for a name that is a link, else `id`.
    var nameID: String = ""
}

/// What must be equal on every device, per path.
struct Node: Equatable, CustomStringConvertible {
    var kind: ItemKind
    var id: String
    var mode: UInt32
    var xattrs: [String: [UInt8]]
    var target: String?
    var size: Int64
    var blocks: [BlockReference]
    /// Folders' mtime: a create, rename or delete inside a folder moves it on every device.
    var folderTime: Int64
    /// How many names the item has (st_nlink of a non-folder).
    var names: UInt32 = 1

    var description: String {
        let attributes = xattrs.keys.sorted().map { "\($0)=\(String(decoding: xattrs[$0]!, as: UTF8.self))" }.joined(separator: ",")
        return "\(kind.rawValue) id=\(id.prefix(8)) mode=\(String(mode, radix: 8)) xattrs=[\(attributes)]"
            + (target.map { " -> \($0)" } ?? "") + " size=\(size) blocks=\(blocks.map { $0.hash.prefix(8) })"
            + (kind == .directory ? " mtime=\(folderTime)" : "") + (names > 1 ? " names=\(names)" : "")
    }
}

final class SoakBatch {
    /// Few names, so devices often pick the same one.
    static let fileNames = ["a.txt", "b.txt", "c.md", "notes"]
    static let folderNames = ["d0", "d1", "d2"]
    static let modes: [UInt32] = [0o600, 0o640, 0o644, 0o700, 0o755]
    static let xattrNames = ["user.tag", "user.color", "user.k"]
    /// Refusals a random operation may meet (a folder not empty, a move into itself...).
    static let expectedRefusals: Set<FileSystemErrorCode> = [.notEmpty, .invalid, .exists, .isDirectory, .notDirectory, .noAttribute]
    static let conflictMarker = " (conflict from "

    let seed: UInt64
    let rounds: Int
    /// Text merging on (three batches of four, by the seed).
    var merging: Bool { seed % 4 != 0 }
    var rng: SplitMix64
    let store = InMemoryStore()
    var stores: [SoakStore] = []
    var devices: [TestDevice] = []
    var models: [DeviceModel] = []
    var history: [String] = []
    var failures: [String] = []
    var round = 0
    var keptStateDirs: [String] = []
    /// Files held open for writing, by device (`SoakBatch+Writers`).
    var writers: [Int: LongWriter] = [:]
    /// Since the last round in which every device was online: what each device touched
    /// (items it changed, and the folders above them and above where it put things), and
    /// the committed items each device deleted.
    var windowTouched: [Set<String>] = []
    /// `inside`: what was inside a deleted folder on the deleting device (a remote change to
    /// any of it brings the folder back there too, docs/CONTAINER-FORMAT.md); `above`: the
    /// folders it was in, so a folder also counts what the device deleted from it earlier.
    var windowDeleted: [(device: Int, id: String, inside: [String], above: [String], what: String)] = []

    /// Records of 2, 3 or 2,000 operations, by the seed: with short ones a round's changes
    /// span several records, and every device applies (and must settle) each in between.
    static func configuration(seed: UInt64) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        // No cycle of its own after a failure: the test decides when each device syncs.
        configuration.maxBackoff = .seconds(3600)
        configuration.maxOperationsPerRecord = [2, 3, 2000][Int(seed % 3)]
        // The once-a-minute look for a lost record is one more request: a quiet sync
        // must make exactly one (a batch under load can take a minute).
        configuration.gapCheckInterval = .seconds(3600)
        return configuration
    }

    init(seed: UInt64, rounds: Int) async throws {
        self.seed = seed
        self.rounds = max(1, rounds)
        rng = SplitMix64(seed: seed)
        for name in ["a", "b", "c"] {
            let soakStore = SoakStore(store)
            stores.append(soakStore)
            devices.append(try await TestDevice(store: soakStore, name: name, checkpointInterval: 16, configuration: Self.configuration(seed: seed)))
            models.append(DeviceModel())
            windowTouched.append([])
        }
        // Text merging on in three batches of four: every meeting of two edits is then held
        // for a merge, with the writers, moves and deletes around it, and released as the
        // copy the model counts (the operations write one-line tokens, so both sides always
        // change the same line; `MergeRoundsTests` checks merges that succeed).
        _ = try await devices[0].engine.setMerge(["text": merging])
        for device in devices.dropFirst() { try await device.sync() }
    }

    var online: [Int] { devices.indices.filter { !models[$0].offline } }

    /// Plays every round; returns failures (each with its replay line and the history).
    func play(_ stats: inout SoakStats) async -> [String] {
        stats.batches += 1
        history = ["seed \(seed), records of \(Self.configuration(seed: seed).maxOperationsPerRecord) operations, text merging \(merging ? "on" : "off")"]
        var round = 1
        while round <= rounds || models.contains(where: \.offline) {
            self.round = round
            failures = []
            do {
                try await playRound(withChanges: round <= rounds, &stats)
            } catch {
                failures.append("round \(round) threw \(error)")
            }
            stats.rounds += 1
            if !failures.isEmpty { break }
            round += 1
        }
        if failures.isEmpty {
            do {
                try await lateJoiner(&stats)
            } catch {
                failures.append("the late device threw \(error)")
            }
        }
        for device in devices { await device.shutdown() }
        if failures.isEmpty {
            // A soak runs thousands of batches: keep only the state of failing ones.
            for device in devices { try? FileManager.default.removeItem(atPath: device.stateDir) }
        } else {
            keptStateDirs = devices.map(\.stateDir)
            for path in keptStateDirs { TemporaryDirectories.keep(path) }
        }
        return report()
    }

    func report() -> [String] {
        guard !failures.isEmpty else { return [] }
        // All the rounds: a long writer's close depends on the last (a replay stops at the failure).
        let replay = "replay with UBIQFS_RANDOM_SEED=\(seed) UBIQFS_RANDOM_ROUNDS=\(rounds)"
            + (round > rounds ? " (the failure is in the reconnect round after the last)" : "")
        let tail = history.suffix(400).joined(separator: "\n")
        let kept = keptStateDirs.isEmpty ? "" : "\nstate dirs kept: " + keptStateDirs.joined(separator: " ")
        return failures.map { "seed \(seed) round \(round): \($0)\n\(replay)\(kept)\n\(tail)" }
    }

    func fail(_ message: String) { failures.append(message) }

    // MARK: A round

    func playRound(withChanges: Bool, _ stats: inout SoakStats) async throws {
        history.append("round \(round)")
        // Who is offline this round: at most one device, for one round or more.
        if withChanges {
            if let away = models.indices.first(where: { models[$0].offline }) {
                if rng.chance(50) { models[away].offline = false }
            } else if rng.chance(25) {
                models[rng.below(devices.count)].offline = true
            }
        } else {
            for index in models.indices { models[index].offline = false }
        }
        for index in devices.indices { stores[index].offline = models[index].offline }
        let away = devices.indices.filter { models[$0].offline }.map { devices[$0].name }
        if !away.isEmpty {
            history.append("  offline: \(away.joined(separator: " "))")
            stats.offlineRounds += 1
        }

        if withChanges {
            for index in devices.indices {
                for op in 1...(1 + rng.below(12)) {
                    let token = "dev-\(devices[index].name) round \(round) op \(op) \(String(rng.next(), radix: 16))"
                    history.append("  \(devices[index].name): " + (try await operation(index, token: token, &stats)))
                }
            }
        }

        if withChanges { await openWriters(&stats) }

        // What the online devices bring to this sync.
        var written: [(content: String, origin: String, id: String)] = []
        var pending: [Int: [PendingEdit]] = [:]
        for index in online {
            written += try writtenContent(index)
            pending[index] = try pendingEdits(index)
        }
        // What the devices know, and every id ever committed: a device back from offline may
        // learn an item committed and deleted while it was away, and keep it (a folder that
        // holds what it changed), which is no new item.
        var idsBefore = try devices.reduce(into: Set<String>()) { ids, device in ids.formUnion(try allIDs(device)) }
        idsBefore.formUnion(await committedIDs())

        var firstOrder: [Int] = []
        closeWriters(pass: 0, roundHasChanges: withChanges)
        // Three passes settle a round: every change is pushed in the first, each device
        // resolves what meets its own in the second, and all apply that in the third. A local
        // change that a held change keeps back (`HeldScope`) goes out only once a record
        // settles what it waits for; when that record is a second-pass push (a long writer
        // elsewhere closed after the first pass), it goes out in the third pass, after some
        // devices synced (seed 13932887830694767404 round 7: a folder's delete waited, a
        // link put in it elsewhere brought it back). So a third pass in which held-back
        // changes went out is followed by a fourth (and that, likewise, by a fifth), in an
        // order of their own so that the rest of a seed plays the same. Each device's last
        // pushes are then applied everywhere: a tree that still differs, or a quiet sync
        // that still pushes, fails as before.
        var passes = 3
        var pass = 0
        while pass < passes {
            pass += 1
            var ownOrder = SplitMix64(seed: seed ^ 0xE7_7A_9A55 ^ UInt64(round * 8 + pass))
            let order = pass <= 3 ? rng.shuffled(online) : ownOrder.shuffled(online)
            if pass == 1 { firstOrder = order }
            history.append("  sync pass \(pass): " + order.map { devices[$0].name }.joined(separator: " "))
            let waiting = pass == passes ? try await heldBackChanges() : [:]
            for index in order { try await devices[index].sync() }
            if pass == 1 { closeWriters(pass: 1, roundHasChanges: withChanges) }
            if pass == passes && passes < 5 {
                let after = try await heldBackChanges()
                if waiting.contains(where: { !$0.value.isSubset(of: after[$0.key] ?? []) }) {
                    passes += 1
                    stats.operations["extra sync pass", default: 0] += 1
                }
            }
        }
        for index in devices.indices where models[index].offline {
            do {
                try await devices[index].sync()
                fail("\(devices[index].name) is offline but its sync succeeded")
            } catch {}
        }
        // The kernel forgets every inode (as it does with its caches under memory pressure).
        for device in devices { try forgetAll(device) }

        let expected = expectedCopies(pending: pending, order: firstOrder)
        let journal = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        // Held changes: what they concern may differ, and the reference holds none if it can.
        let heldBy = try await heldItems()
        let held = heldBy.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        let holding = Set(heldBy.keys)
        let candidates = online.filter { !holding.contains($0) }.isEmpty ? online : online.filter { !holding.contains($0) }
        let reference = candidates[rng.below(candidates.count)]
        if !held.isEmpty {
            stats.operations["held", default: 0] += 1
            history.append("  held: \(holding.map { devices[$0].name }.sorted()) \(held.map { $0.prefix(8) }.sorted())")
        }
        try await checkConvergence(reference: reference, written: written, idsBefore: idsBefore, expectedCopies: expected, held: held, &stats)
        if away.isEmpty {
            try await checkDeletes(reference: reference, held: heldBy, &stats)
        }
        try await checkQuiet(journal: journal, holding: holding, &stats)
        for index in devices.indices {
            try checkMetadata(devices[index], quiescent: !models[index].offline && !holding.contains(index), &stats)
            try await checkCache(devices[index], open: writers[index]?.ino, &stats)
        }

        for index in online {
            // An edit that a change held here keeps back is still to be pushed (once the held
            // change lands, in a later round), and meets the edits made meanwhile elsewhere.
            let keptBack = try heldBackEdits(index, among: heldBy[index] ?? [])
            models[index].known = try liveIDs(devices[index])
            models[index].writtenInodes.formIntersection(keptBack.inodes)
            models[index].contentEdits.formIntersection(keptBack.ids)
            models[index].unseen = []
            models[index].maybeUnseen = try heldVersions(devices[index])
        }
    }

}
