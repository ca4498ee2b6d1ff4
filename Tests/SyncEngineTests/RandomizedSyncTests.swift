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
import SyncEngine
import Synchronization
import Testing

/// Three devices change one container, sometimes offline, then sync in a random order,
/// round after round. The scenarios in `SyncTests` check each conflict rule alone; this
/// test looks for the combinations no one wrote down.
///
/// Every choice of a batch comes from one seed, named in each failure:
/// `UBIQFS_RANDOM_SEED=<seed> UBIQFS_RANDOM_ROUNDS=<round>` replays that batch up to the
/// failing round (the offline schedule of a round does not depend on the number of rounds;
/// a device still offline after the last round comes back in an extra round without
/// changes, so every batch ends with all devices in one state).
///
/// Soak mode: `UBIQFS_SOAK_MINUTES=N` runs batches (3 fresh devices, `UBIQFS_RANDOM_ROUNDS`
/// rounds, default 8) until N minutes have passed; batch 0 uses the base seed, batch i the
/// i-th output of `SplitMix64(base seed)`. Without it the test runs the first `ciBatches`
/// batches (a count, not a time: CI runs the same seeds on any machine); with only
/// `UBIQFS_RANDOM_SEED` it runs exactly that batch.
/// The last line printed counts rounds, operations by kind, invariants checked, conflict
/// copies seen, seeds and elapsed time.
///
/// After every round, among the devices that are online (all of them in most rounds):
/// - convergence: the same paths, item ids, kinds, modes, user xattrs, symlink targets,
///   sizes and committed blocks; local content equal to the content read on one device;
/// - no lost writes: the content of every file a device wrote since its last sync (and
///   still had when it synced, if it differs from the committed content) is in the tree,
///   at its path or as a conflict copy;
/// - conflict copies: exactly the number the model predicts (see `expectedCopies`);
/// - a second sync transfers nothing: no store writes, no block reads, one journal read
///   per device (and the checkpoint listing while the journal is empty), no new journal
///   record, nothing pending, `lastSeq` at the journal's end;
/// - on every device (online or not): `PRAGMA integrity_check` is ok, every live item's
///   parent is a live folder, and (online) no row is dirty and the `base` table is exactly
///   the committed state of the live rows;
/// - cache accounting: `cacheBytes()` equals the allocated size of the cache files, every
///   local file has a cache file of its size, no cache file without a live local file, and
///   `cache/tmp` is empty.
/// When every device is online again, also: no resurrected deletes (see `checkDeletes`).
/// At the end of a batch a fourth device joins from the checkpoint and must converge.
@Suite struct RandomizedSyncTests {
    private static let environment = ProcessInfo.processInfo.environment
    static let explicitSeed = environment["UBIQFS_RANDOM_SEED"].flatMap { UInt64($0) }
    static let seed = explicitSeed ?? 20_250_601
    static let rounds = environment["UBIQFS_RANDOM_ROUNDS"].flatMap { Int($0) } ?? 8
    static let soakMinutes = environment["UBIQFS_SOAK_MINUTES"].flatMap { Double($0) }
    /// Batches in CI (about 3 s each in a debug build).
    static let ciBatches = 12

    @Test func devicesConvergeWithoutLosingWrites() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let budget: Duration? = Self.soakMinutes.map { .milliseconds($0 * 60_000) }
        let batches = Self.soakMinutes != nil ? Int.max : Self.explicitSeed != nil ? 1 : Self.ciBatches
        print("RandomizedSyncTests: UBIQFS_RANDOM_SEED=\(Self.seed) UBIQFS_RANDOM_ROUNDS=\(Self.rounds) " + (budget.map { "budget=\($0)" } ?? "batches=\(batches)"))
        var stats = SoakStats()
        var seeds = SplitMix64(seed: Self.seed)
        var failedBatches = 0
        var failureHeadlines: [String] = []
        var batch = 0
        while true {
            let seed = batch == 0 ? Self.seed : seeds.next()
            stats.seeds.append(seed)
            let run = try await SoakBatch(seed: seed, rounds: Self.rounds)
            let failures = await run.play(&stats)
            for failure in failures { Issue.record(Comment(rawValue: failure)) }
            if !failures.isEmpty { failedBatches += 1 }
            failureHeadlines += failures.map { String($0.prefix { $0 != "\n" }) }
            batch += 1
            // CI stops after three failing batches; a soak goes on to find every kind of failure.
            guard batch < batches, budget.map({ clock.now - start < $0 }) ?? true, failedBatches < 3 || Self.soakMinutes != nil else { break }
        }
        let elapsed = clock.now - start
        for headline in failureHeadlines { print("RandomizedSyncTests: FAILED \(headline)") }
        print("RandomizedSyncTests: " + stats.summary(elapsed: elapsed) + "; failed batches \(failedBatches)")
    }
}

// MARK: - Counts

/// What a run did, for the last line.
struct SoakStats {
    var batches = 0
    var rounds = 0
    var operations: [String: Int] = [:]
    var refused: [String: Int] = [:]
    var invariants: [String: Int] = [:]
    var conflictCopies = 0
    var offlineRounds = 0
    var seeds: [UInt64] = []

    mutating func checked(_ name: String, _ count: Int = 1) { invariants[name, default: 0] += count }

    func summary(elapsed: Duration) -> String {
        func list(_ counts: [String: Int]) -> String {
            counts.keys.sorted().map { "\($0)=\(counts[$0]!)" }.joined(separator: " ")
        }
        let done = operations.values.reduce(0, +)
        let seedList = seeds.count <= 12
            ? seeds.map(String.init).joined(separator: ",")
            : seeds.prefix(6).map(String.init).joined(separator: ",") + ",...,\(seeds.last!) (\(seeds.count) seeds from SplitMix64(base))"
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return "\(batches) batches, \(rounds) rounds (\(offlineRounds) with a device offline); "
            + "operations \(done) [\(list(operations))]; refused \(refused.values.reduce(0, +)) [\(list(refused))]; "
            + "invariants checked \(invariants.values.reduce(0, +)) [\(list(invariants))]; "
            + "conflict copies \(conflictCopies); seeds \(seedList); elapsed \(String(format: "%.1f", seconds)) s"
    }
}

// MARK: - A store per device

/// Passes calls to the shared store, counting them, or fails them all while the device is
/// offline (as a network store would: `unreachable`, before anything happened).
final class SoakStore: ContainerStore {
    struct Counters: Sendable, CustomStringConvertible {
        var reads = 0
        var blockReads = 0
        var writes = 0
        var other = 0
        var total: Int { reads + blockReads + writes + other }
        var description: String { "reads=\(reads) blockReads=\(blockReads) writes=\(writes) other=\(other)" }
    }

    private struct State {
        var offline = false
        var counters = Counters()
    }

    let base: any ContainerStore
    private let state = Mutex(State())

    init(_ base: any ContainerStore) { self.base = base }

    var displayName: String { "soak(\(base.displayName))" }

    var offline: Bool {
        get { state.withLock { $0.offline } }
        set { state.withLock { $0.offline = newValue } }
    }

    func takeCounters() -> Counters {
        state.withLock { state in
            defer { state.counters = Counters() }
            return state.counters
        }
    }

    private enum Kind { case read, write, other }

    private func enter(_ key: String, _ kind: Kind) throws(StoreError) {
        let offline = state.withLock { state -> Bool in
            switch kind {
            case .read where key.hasPrefix(ContainerLayout.blockPrefix): state.counters.blockReads += 1
            case .read: state.counters.reads += 1
            case .write: state.counters.writes += 1
            case .other: state.counters.other += 1
            }
            return state.offline
        }
        if offline { throw StoreError(code: .unreachable, message: "the device is offline (soak test)") }
    }

    func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        try enter(key, .read)
        return try await base.get(key, range: range)
    }

    func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try enter(key, .write)
        try await base.put(key, bytes)
    }

    func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try enter(key, .write)
        return try await base.putIfAbsent(key, bytes)
    }

    func exists(_ key: String) async throws(StoreError) -> Bool {
        try enter(key, .other)
        return try await base.exists(key)
    }

    func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try enter(prefix, .other)
        return try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    func delete(_ key: String) async throws(StoreError) {
        try enter(key, .write)
        try await base.delete(key)
    }
}

// MARK: - One batch

/// What the test knows about one device, from the operations it made.
private struct DeviceModel {
    var offline = false
    /// Item ids this device had after its last sync: committed, known to every device.
    var known: Set<String> = []
    /// Inodes whose content this device wrote since its last sync (lost-write check).
    var writtenInodes: Set<Inode> = []
    /// Ids of known files whose content this device changed since its last sync.
    var contentEdits: Set<String> = []
    /// Ids of files whose content other devices committed since this device's last sync.
    var unseen: Set<String> = []
}

/// One item of a device's tree.
private struct Entry {
    var path: String
    var ino: Inode
    var kind: ItemKind
    var mode: UInt32
    var id: String
}

/// What must be equal on every device, per path.
private struct Node: Equatable, CustomStringConvertible {
    var kind: ItemKind
    var id: String
    var mode: UInt32
    var xattrs: [String: [UInt8]]
    var target: String?
    var size: Int64
    var blocks: [BlockReference]

    var description: String {
        let attributes = xattrs.keys.sorted().map { "\($0)=\(String(decoding: xattrs[$0]!, as: UTF8.self))" }.joined(separator: ",")
        return "\(kind.rawValue) id=\(id.prefix(8)) mode=\(String(mode, radix: 8)) xattrs=[\(attributes)]"
            + (target.map { " -> \($0)" } ?? "") + " size=\(size) blocks=\(blocks.map { $0.hash.prefix(8) })"
    }
}

private final class SoakBatch {
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
    var rng: SplitMix64
    let store = InMemoryStore()
    var stores: [SoakStore] = []
    var devices: [TestDevice] = []
    private var models: [DeviceModel] = []
    var history: [String] = []
    var failures: [String] = []
    var round = 0
    var keptStateDirs: [String] = []
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
    }

    var online: [Int] { devices.indices.filter { !models[$0].offline } }

    /// Plays every round; returns failures (each with its replay line and the history).
    func play(_ stats: inout SoakStats) async -> [String] {
        stats.batches += 1
        history = ["seed \(seed), records of \(Self.configuration(seed: seed).maxOperationsPerRecord) operations"]
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
        }
        return report()
    }

    private func report() -> [String] {
        guard !failures.isEmpty else { return [] }
        let replay = "replay with UBIQFS_RANDOM_SEED=\(seed) UBIQFS_RANDOM_ROUNDS=\(min(round, rounds))"
            + (round > rounds ? " (the failure is in the reconnect round after the last)" : "")
        let tail = history.suffix(400).joined(separator: "\n")
        let kept = keptStateDirs.isEmpty ? "" : "\nstate dirs kept: " + keptStateDirs.joined(separator: " ")
        return failures.map { "seed \(seed) round \(round): \($0)\n\(replay)\(kept)\n\(tail)" }
    }

    private func fail(_ message: String) { failures.append(message) }

    // MARK: A round

    private func playRound(withChanges: Bool, _ stats: inout SoakStats) async throws {
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

        // What the online devices bring to this sync.
        var written: [(content: String, origin: String)] = []
        var pending: [Int: [(id: String, real: Bool)]] = [:]
        for index in online {
            written += try writtenContent(index)
            pending[index] = try pendingEdits(index)
        }
        let idsBefore = try devices.reduce(into: Set<String>()) { ids, device in ids.formUnion(try allIDs(device)) }

        var firstOrder: [Int] = []
        for pass in 1...3 {
            let order = rng.shuffled(online)
            if pass == 1 { firstOrder = order }
            history.append("  sync pass \(pass): " + order.map { devices[$0].name }.joined(separator: " "))
            for index in order { try await devices[index].sync() }
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
        let reference = online[rng.below(online.count)]
        try await checkConvergence(reference: reference, written: written, idsBefore: idsBefore, expectedCopies: expected, &stats)
        if away.isEmpty {
            try await checkDeletes(reference: reference, &stats)
        }
        try await checkQuiet(journal: journal, &stats)
        for index in devices.indices {
            try checkMetadata(devices[index], quiescent: !models[index].offline, &stats)
            try checkCache(devices[index], &stats)
        }

        for index in online {
            models[index].known = try liveIDs(devices[index])
            models[index].writtenInodes = []
            models[index].contentEdits = []
            models[index].unseen = []
        }
    }

    // MARK: Operations

    /// One random local change; returns its log line. Refusals the kernel would also give
    /// (a folder not empty, a move into itself) are logged and skipped; so are downloads
    /// that an offline device cannot make.
    private func operation(_ index: Int, token: String, _ stats: inout SoakStats) async throws -> String {
        let device = devices[index]
        let all = try entries(device)
        let byPath = Dictionary(uniqueKeysWithValues: all.map { ($0.path, $0) })
        let files = all.filter { $0.kind == .file }
        let folders = all.filter { $0.kind == .directory }
        let folderPaths = [""] + folders.map(\.path)
        func inside(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }
        func name(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
        func folder(_ path: String) -> String { path.split(separator: "/").dropLast().joined(separator: "/") }
        /// The ids of the folders on the way to `path` (the root excluded), and of the item there if any.
        func chain(_ path: String) -> [String] {
            var ids: [String] = []
            var prefix = ""
            for part in path.split(separator: "/") {
                prefix = prefix.isEmpty ? String(part) : prefix + "/" + part
                if let entry = byPath[prefix] { ids.append(entry.id) }
            }
            return ids
        }
        let model = { self.models[index] }
        func touch(_ ids: [String]) { windowTouched[index].formUnion(ids) }
        func contentChanged(_ entry: Entry) {
            models[index].writtenInodes.insert(entry.ino)
            models[index].contentEdits.insert(entry.id)
            touch(chain(entry.path))
        }
        func deleted(_ entry: Entry) {
            if model().known.contains(entry.id) {
                let inside = all.filter { $0.path.hasPrefix(entry.path + "/") }.map(\.id)
                windowDeleted.append((index, entry.id, inside, chain(folder(entry.path)), "\(device.name) deleted \(entry.path) in round \(round)"))
            }
        }
        func unlink(_ entry: Entry) throws {
            try device.core.unlink(parent: try parentInode(device, entry.path), name: Array(name(entry.path).utf8), directory: entry.kind == .directory)
            deleted(entry)
        }

        /// A rename replaced `existing`: a new file continues its item (a safe save, so its
        /// content is a content change of that item); anything else deletes it.
        func renamedOver(_ existing: Entry, by source: Entry) throws {
            if source.kind == .file && existing.kind == .file && !model().known.contains(source.id) {
                models[index].contentEdits.insert(existing.id)
                touch([existing.id])
            } else {
                deleted(existing)
            }
        }

        var kind = ""
        var line = ""
        do {
            switch rng.below(27) {
            case 0..<3:
                kind = "create"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                line = "create \(path) = \(token.debugDescription)"
                let (attributes, handle) = try device.core.create(
                    parent: try parentInode(device, path), name: Array(name(path).utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller
                )
                defer { device.core.release(handle: handle) }
                _ = try Array(token.utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
                models[index].writtenInodes.insert(attributes.ino)
                touch(chain(folder(path)))
            case 3..<6:
                kind = "overwrite"
                guard let file = rng.pick(files) else { return "overwrite: no file" }
                line = "overwrite \(file.path) = \(token.debugDescription)"
                try await device.write(file.path, token)
                contentChanged(file)
            case 6..<8:
                kind = "append"
                guard let file = rng.pick(files) else { return "append: no file" }
                line = "append \(file.path) += \(token.debugDescription)"
                let handle = try await device.open(file.ino, flags: O_WRONLY | O_APPEND)
                defer { device.core.release(handle: handle) }
                _ = try Array(token.utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
                contentChanged(file)
            case 8:
                kind = "truncate"
                guard let file = rng.pick(files) else { return "truncate: no file" }
                let size = try device.core.attributes(file.ino).size
                let newSize = Int64(rng.below(Int(max(size, 1))))
                line = "truncate \(file.path) to \(newSize)"
                // A placeholder's content is downloaded by the truncate itself.
                _ = try await device.core.setAttributes(file.ino, AttributeChanges(size: newSize), handle: nil)
                contentChanged(file)
            case 9..<11:
                kind = "mkdir"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.folderNames)!)
                line = "mkdir \(path)"
                try device.mkdir(path)
                touch(chain(folder(path)))
            case 11..<14:
                kind = "rename"
                guard let source = rng.pick(all) else { return "rename: nothing" }
                let destination = rng.pick(folderPaths)!
                let taken = all.filter { $0.path != source.path && folder($0.path) == destination }.map { name($0.path) }
                let newName: String = switch rng.below(4) {
                case 0: name(source.path)
                case 1: rng.pick(taken) ?? name(source.path)
                default: rng.pick(source.kind == .directory ? Self.folderNames : Self.fileNames)!
                }
                let target = inside(destination, newName)
                line = "rename \(source.path) -> \(target)"
                try device.rename(source.path, target)
                touch(chain(source.path) + chain(destination))
                if let existing = byPath[target], existing.ino != source.ino {
                    try renamedOver(existing, by: source)
                }
            case 14:
                kind = "safe-save"
                guard let file = rng.pick(files) else { return "safe-save: no file" }
                let temporary = inside(folder(file.path), ".saving")
                line = "safe-save \(file.path) = \(token.debugDescription)"
                if byPath[temporary] != nil { return line + " (temporary exists)" }
                try await device.write(temporary, token)
                try device.rename(temporary, file.path)
                models[index].writtenInodes.insert(try #require(device.inode(file.path)))
                touch(chain(file.path))
                models[index].contentEdits.insert(file.id)
            case 15..<17:
                kind = "delete"
                guard let item = rng.pick(all.filter { $0.kind != .directory }) else { return "delete: no file" }
                line = "delete \(item.path)"
                try unlink(item)
            case 17:
                kind = "rmdir"
                guard let folder = rng.pick(folders) else { return "rmdir: no folder" }
                line = "rmdir \(folder.path)"
                try unlink(folder)
            case 18:
                kind = "rm-r"
                guard let folder = rng.pick(folders) else { return "rm -r: no folder" }
                let inside = all.filter { $0.path.hasPrefix(folder.path + "/") }.sorted { $0.path.count > $1.path.count }
                line = "rm -r \(folder.path) (\(inside.count) inside)"
                for item in inside + [folder] { try unlink(item) }
            case 19:
                kind = "chmod"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "chmod: nothing" }
                let mode = rng.pick(Self.modes)!
                line = "chmod \(item.path) \(String(mode, radix: 8))"
                _ = try await device.core.setAttributes(item.ino, AttributeChanges(mode: mode), handle: nil)
                touch(chain(item.path))
            case 20:
                kind = "setxattr"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "setxattr: nothing" }
                let key = rng.pick(Self.xattrNames)!
                line = "setxattr \(item.path) \(key)=\(token.debugDescription)"
                try device.core.setXattr(item.ino, name: Array(key.utf8), value: Array(token.utf8), flags: 0)
                touch(chain(item.path))
            case 21:
                kind = "removexattr"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "removexattr: nothing" }
                let key = rng.pick(Self.xattrNames)!
                line = "removexattr \(item.path) \(key)"
                try device.core.removeXattr(item.ino, name: Array(key.utf8))
                touch(chain(item.path))
            case 22:
                kind = "symlink"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                let target = rng.pick(["a.txt", "../d0/b.txt", "/tmp/elsewhere", "link-\(token.suffix(6))"])!
                line = "symlink \(path) -> \(target)"
                _ = try device.core.symlink(parent: try parentInode(device, path), name: Array(name(path).utf8), target: Array(target.utf8), caller: TestDevice.caller)
                touch(chain(folder(path)))
            case 23:
                kind = "exchange"
                guard let first = rng.pick(all), let second = rng.pick(all), first.path != second.path else { return "exchange: nothing" }
                line = "exchange \(first.path) <-> \(second.path)"
                let (parent, newParent) = (try parentInode(device, first.path), try parentInode(device, second.path))
                try device.core.rename(parent: parent, name: Array(name(first.path).utf8), newParent: newParent, newName: Array(name(second.path).utf8), exchange: true, noReplace: false)
                touch(chain(first.path) + chain(second.path))
            default:
                kind = "evict"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "evict: nothing" }
                line = "evict \(item.path)"
                try device.core.evict(item.ino)
            }
        } catch let error as FileSystemError where Self.expectedRefusals.contains(error.code) || (kind == "evict" && error.code == .busy) {
            stats.refused[kind, default: 0] += 1
            return "\(line) (refused: \(error.code))"
        } catch where models[index].offline && isDownloadFailure(error) {
            stats.refused[kind, default: 0] += 1
            return "\(line) (offline: \(error))"
        }
        stats.operations[kind, default: 0] += 1
        return line
    }

    private func isDownloadFailure(_ error: any Error) -> Bool {
        if let error = error as? SyncError { return error.code == .unreachable }
        if let error = error as? FileSystemError { return error.code == .unreachable }
        return false
    }

    private func parentInode(_ device: TestDevice, _ path: String) throws -> Inode {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        return try #require(device.inode(parent), "no folder \(parent) on \(device.name)")
    }

    // MARK: The model

    /// The content of every file this device wrote since its last sync and still has.
    /// A write that left a committed file's content as it was committed (a truncate of an
    /// empty file) is no edit: a concurrent real edit elsewhere may replace it, no copy kept.
    private func writtenContent(_ index: Int) throws -> [(content: String, origin: String)] {
        let device = devices[index]
        let info = device.engine.info
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        return try entries(device).filter { $0.kind == .file && models[index].writtenInodes.contains($0.ino) }.compactMap { entry in
            let bytes = try #require(FileManager.default.contents(atPath: device.cache.path(for: entry.ino)), "\(device.name):\(entry.path) written but has no cache file")
            if let row = byIno[entry.ino], row.baseSeq > 0, Self.blocks(Array(bytes), info: info) == row.blockList { return nil }
            return (String(decoding: bytes, as: UTF8.self), "\(device.name):\(entry.path) (written by round \(round))")
        }
    }

    /// The known files whose content this device changed and still has, and whether the
    /// content differs from the committed one (a truncate to the same size does not).
    private func pendingEdits(_ index: Int) throws -> [(id: String, real: Bool)] {
        let device = devices[index]
        let info = device.engine.info
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let live = Dictionary(rows.filter { !$0.deleted && $0.itemKind == .file }.map { ($0.itemID.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        var result: [(id: String, real: Bool)] = []
        for id in models[index].contentEdits.sorted() where models[index].known.contains(id) {
            guard let row = live[id] else { continue }
            if !row.dirtyFlags.contains(.content) {
                fail("\(device.name): \(row.itemName) was changed here but its content is not marked for upload (dirty \(row.dirtyFlags.rawValue))")
            }
            let bytes = try #require(FileManager.default.contents(atPath: device.cache.path(for: row.inode)), "\(device.name): no cache file for changed \(row.itemName)")
            result.append((id, Self.blocks(Array(bytes), info: info) != row.blockList))
        }
        return result
    }

    static func blocks(_ bytes: [UInt8], info: ContainerInfo) -> [BlockReference] {
        var blocks: [BlockReference] = []
        var start = 0
        while start < bytes.count {
            let block = Array(bytes[start..<min(start + info.writtenBlockLength(index: blocks.count), bytes.count)])
            blocks.append(BlockReference(hash: ContentHasher.sha256Hex(block), length: Int64(block.count)))
            start += block.count
        }
        return blocks
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
    /// before it reaches the store (no half-done commit).
    private func expectedCopies(pending: [Int: [(id: String, real: Bool)]], order: [Int]) -> Int {
        var changed: Set<String> = []
        var copies = 0
        for index in order {
            for (id, real) in pending[index] ?? [] {
                if models[index].unseen.contains(id) || changed.contains(id) {
                    copies += 1
                } else if real {
                    changed.insert(id)
                }
            }
        }
        for index in devices.indices where models[index].offline {
            models[index].unseen.formUnion(changed)
        }
        return copies
    }

    // MARK: Invariants

    private func checkConvergence(
        reference: Int, written: [(content: String, origin: String)], idsBefore: Set<String>, expectedCopies: Int, _ stats: inout SoakStats
    ) async throws {
        let referenceDevice = devices[reference]
        let expected = try snapshot(referenceDevice)
        // The reference reads every file (downloading what it must); others compare the
        // content they hold locally, and the committed blocks of the rest.
        var contents: [String: String] = [:]
        let info = referenceDevice.engine.info
        for (path, node) in expected where node.kind == .file {
            let content = try await referenceDevice.read(path)
            contents[path] = content
            stats.checked("content matches blocks")
            if Self.blocks(Array(content.utf8), info: info) != node.blocks {
                fail("\(referenceDevice.name):\(path) reads \(content.debugDescription), which is not its committed blocks \(node)")
            }
        }
        for index in online where index != reference {
            let device = devices[index]
            let tree = try snapshot(device)
            stats.checked("convergence")
            if tree != expected {
                let paths = Set(tree.keys).union(expected.keys).sorted().filter { tree[$0] != expected[$0] }
                fail("trees differ between \(referenceDevice.name) and \(device.name):\n" + paths.map {
                    "  \($0): \(referenceDevice.name)=\(expected[$0]?.description ?? "-")\n  \(String(repeating: " ", count: $0.count + 2))\(device.name)=\(tree[$0]?.description ?? "-")"
                }.joined(separator: "\n"))
            }
            let localFiles = try localFileInodes(device)
            for entry in try entries(device) where entry.kind == .file && localFiles.contains(entry.ino) {
                let local = String(decoding: FileManager.default.contents(atPath: device.cache.path(for: entry.ino)) ?? Data(), as: UTF8.self)
                stats.checked("local content")
                if let content = contents[entry.path], local != content {
                    fail("\(device.name):\(entry.path) holds \(local.debugDescription) but \(referenceDevice.name) reads \(content.debugDescription)")
                }
            }
        }
        // No lost writes.
        let present = Set(contents.values)
        for (content, origin) in written {
            stats.checked("no lost write")
            if !present.contains(content) {
                fail("lost write: \(origin) had \(content.debugDescription)\ntree of \(referenceDevice.name):\n" + contents.keys.sorted().map { "  \($0): \(contents[$0]!.debugDescription)" }.joined(separator: "\n"))
            }
        }
        // Conflict copies: the items this sync created.
        let created = expected.filter { !idsBefore.contains($0.value.id) }
        for (path, node) in created where node.kind != .file || !path.contains(Self.conflictMarker) {
            fail("this sync created \(path) (\(node)), which is not a conflict copy")
        }
        stats.checked("conflict copies")
        stats.conflictCopies += created.count
        if created.count != expectedCopies {
            fail("expected \(expectedCopies) conflict copies from this sync, found \(created.count): \(created.keys.sorted())")
        }
    }

    /// No resurrected deletes. A committed item that a device deleted must be gone once all
    /// devices synced, unless another device touched it since the last round in which
    /// all were online: changed it, moved it, or changed or put something inside it. That
    /// window is wider than "concurrently" (a change the deleting device had already seen
    /// also counts), so this is a lower bound of what must stay deleted: the model cannot
    /// tell apart, without replaying the journal, which of two changes in the window a
    /// device saw first.
    private func checkDeletes(reference: Int, _ stats: inout SoakStats) async throws {
        let present = try liveIDs(devices[reference])
        for (device, id, inside, _, what) in windowDeleted {
            // Touched elsewhere: the item, or what it held here when it was deleted (a folder
            // moved into it here, then changed on another device, brings it back), or held
            // earlier in the window and deleted first (a file edited elsewhere comes back, and
            // its folder with it).
            let emptiedFirst = windowDeleted.filter { $0.device == device && $0.above.contains(id) }.flatMap { [$0.id] + $0.inside }
            let held = inside + emptiedFirst
            let touched = windowTouched.indices.contains { other in
                other != device && (windowTouched[other].contains(id) || held.contains { windowTouched[other].contains($0) })
            }
            guard !touched else { continue }
            stats.checked("no resurrected delete")
            if present.contains(id) {
                let path = try await devices[reference].metadata.read { db in try ItemRow.find(id: ItemID(id), db).map { try ItemRow.path(of: $0.inode, db) } }
                let history = await storeHistory(of: [id])
                fail("resurrected delete: \(what), no other device touched it, yet it is back as \(path ?? "?") (id \(id))\n"
                    + "journal and checkpoints about it:\n" + history)
            }
        }
        windowDeleted = []
        windowTouched = windowTouched.map { _ in [] }
    }

    /// A second sync of the online devices: nothing to transfer, nothing to commit.
    private func checkQuiet(journal: Int, _ stats: inout SoakStats) async throws {
        for soakStore in stores { _ = soakStore.takeCounters() }
        for index in rng.shuffled(online) { try await devices[index].sync() }
        let journalAfter = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        stats.checked("quiet sync")
        if journalAfter != journal {
            fail("a sync after quiescence committed \(journalAfter - journal) more journal records")
        }
        for index in online {
            let device = devices[index]
            let counters = stores[index].takeCounters()
            stats.checked("quiet sync")
            // One read of the next journal key; with an empty journal (lastSeq 0) also the
            // listing of checkpoints/ that a new device makes (docs/ARCHITECTURE.md, "Pull").
            let allowed = journal == 0 ? 2 : 1
            if counters.writes != 0 || counters.blockReads != 0 || counters.total > allowed {
                fail("\(device.name): a sync after quiescence made store calls beyond one journal read: \(counters)")
            }
            let status = await device.engine.status()
            if status.pendingItems != 0 { fail("\(device.name) still has \(status.pendingItems) pending items") }
            if status.lastSeq != UInt64(journal) { fail("\(device.name) is at journal \(status.lastSeq), the journal has \(journal)") }
        }
    }

    /// SQLite's own check, and the shape of the tables.
    private func checkMetadata(_ device: TestDevice, quiescent: Bool, _ stats: inout SoakStats) throws {
        let (integrity, rows, bases, xattrs) = try device.metadata.read { db in
            let rows = try ItemRow.fetchAll(db)
            let xattrs = try Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, try StoredXattrs.all(of: $0.inode, db)) })
            return (try String.fetchAll(db, sql: "PRAGMA integrity_check"), rows, try BaseSnapshots.all(db), xattrs)
        }
        stats.checked("sqlite integrity")
        if integrity != ["ok"] { fail("\(device.name): PRAGMA integrity_check says \(integrity)") }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        let live = rows.filter { !$0.deleted && $0.inode != Inode.root }
        stats.checked("metadata shape")
        for row in live {
            guard let parentIno = row.parent, let parent = byIno[parentIno], !parent.deleted, parent.itemKind == .directory else {
                fail("\(device.name): live item \(row.itemName) (ino \(row.inode)) has no live folder (parent \(row.parent.map(String.init) ?? "nil"))")
                continue
            }
        }
        guard quiescent else { return }
        stats.checked("committed state")
        let dirty = rows.filter { !$0.dirtyFlags.isEmpty }
        if !dirty.isEmpty {
            fail("\(device.name): rows still dirty after sync: \(dirty.map { "\($0.itemName) dirty=\($0.dirtyFlags.rawValue) deleted=\($0.deleted)" })")
        }
        let basesByID = Dictionary(bases.map { ($0.id.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        let liveIDs = Set(live.map(\.itemID.rawValue))
        let stale = bases.filter { !liveIDs.contains($0.id.rawValue) }
        if !stale.isEmpty {
            fail("\(device.name): base snapshots of items not in the tree: \(stale.map { "\($0.name) \($0.id.rawValue.prefix(8))" })")
        }
        for row in live {
            guard let base = basesByID[row.itemID.rawValue] else {
                fail("\(device.name): \(row.itemName) has no committed snapshot")
                continue
            }
            let parentID = row.parent == Inode.root ? ItemID.root.rawValue : byIno[row.parent ?? 0]?.itemID.rawValue
            let samePlace: Bool = base.name == row.itemName && base.parent.rawValue == parentID && base.kind == row.itemKind
            let sameMetadata: Bool = base.mode == UInt32(row.mode) && base.target == row.symlinkTarget && (base.xattrs ?? [:]) == xattrs[row.inode]
            let sameContent: Bool = row.itemKind != .file || ((base.blocks ?? []) == row.blockList && base.size == row.size)
            if !(samePlace && sameMetadata && sameContent) {
                fail("\(device.name): \(row.itemName) differs from its committed snapshot: row mode \(String(row.mode, radix: 8)) size \(row.size) vs \(base)")
            }
        }
    }

    /// The cache holds exactly the content of the local files, and says so.
    private func checkCache(_ device: TestDevice, _ stats: inout SoakStats) throws {
        let directory = device.cache.directory
        // tmp/ holds downloads in flight, reserve the space kept for deletes on a full disk.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != "tmp" && $0 != "reserve" }
        var sizes: [Inode: Int64] = [:]
        var allocated: Int64 = 0
        for name in names {
            guard let ino = UInt64(name).map(Inode.init(rawValue:)) else {
                fail("\(device.name): stray file cache/\(name)")
                continue
            }
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { continue }
            sizes[ino] = Int64(info.st_size)
            allocated += Int64(info.st_blocks) * 512
        }
        stats.checked("cache accounting")
        let reported = device.core.cacheBytes()
        if reported != allocated { fail("\(device.name): cacheBytes() says \(reported), the cache files take \(allocated)") }
        let temporaries = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")) ?? []
        if !temporaries.isEmpty { fail("\(device.name): cache/tmp holds \(temporaries)") }
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let local = Dictionary(uniqueKeysWithValues: rows.filter { !$0.deleted && $0.itemKind == .file && $0.contentState == .local }.map { ($0.inode, $0) })
        for (ino, row) in local {
            guard let size = sizes[ino] else {
                fail("\(device.name): \(row.itemName) is local but has no cache file")
                continue
            }
            // A dirty row's size is not updated by writes (only an offline device has some).
            if row.dirtyFlags.isEmpty && size != row.size { fail("\(device.name): \(row.itemName) has size \(row.size), its cache file \(size)") }
        }
        for ino in sizes.keys where local[ino] == nil {
            let row = rows.first { $0.inode == ino }
            fail("\(device.name): orphan cache file cache/\(ino) (\(row.map { "\($0.itemName) deleted=\($0.deleted) content=\($0.contentState)" } ?? "no row"))")
        }
    }

    /// A new device joins from the newest checkpoint and the journal after it.
    private func lateJoiner(_ stats: inout SoakStats) async throws {
        let journal = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        let late = try await TestDevice(store: store, name: "late", checkpointInterval: 16, configuration: Self.configuration(seed: seed))
        do {
            let before = failures.count
            try checkLateJoiner(late, &stats)
            let journalAfter = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
            stats.checked("late device commits nothing")
            if journalAfter != journal { fail("the device joining after the last round committed \(journalAfter - journal) journal records") }
            if failures.count > before {
                let ids = try Set(snapshot(late).values.map(\.id)).symmetricDifference(Set(snapshot(devices[0]).values.map(\.id)))
                failures.append("journal and checkpoints about the items that differ:\n" + (await storeHistory(of: ids)))
            }
        } catch {
            await late.shutdown()
            throw error
        }
        await late.shutdown()
        if failures.isEmpty { try? FileManager.default.removeItem(atPath: late.stateDir) }
    }

    private func checkLateJoiner(_ late: TestDevice, _ stats: inout SoakStats) throws {
        let reference = devices[0]
        let expected = try snapshot(reference)
        let tree = try snapshot(late)
        stats.checked("late device converges")
        if tree != expected {
            let paths = Set(tree.keys).union(expected.keys).sorted().filter { tree[$0] != expected[$0] }
            fail("a device joining after the last round differs from \(reference.name):\n" + paths.map {
                "  \($0): \(reference.name)=\(expected[$0]?.description ?? "-") late=\(tree[$0]?.description ?? "-")"
            }.joined(separator: "\n"))
        }
        try checkMetadata(late, quiescent: true, &stats)
        try checkCache(late, &stats)
    }

    /// What the store says about some items: checkpoints that hold them, journal operations
    /// on them (on every item with `UBIQFS_SOAK_DUMP=1`).
    private func storeHistory(of ids: Set<String>) async -> String {
        var lines: [String] = []
        for key in (try? await store.listAll(prefix: ContainerLayout.checkpointPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let checkpoint = try? RecordCodec.decode(Checkpoint.self, from: bytes) else { continue }
            let held = checkpoint.items.filter { ids.contains($0.id.rawValue) }.map { "\($0.name) \($0.id.rawValue.prefix(8))" }
            lines.append("  \(key): \(checkpoint.items.count) items, of these: \(held)")
        }
        for key in (try? await store.listAll(prefix: ContainerLayout.journalPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let record = try? RecordCodec.decode(JournalRecord.self, from: bytes) else { continue }
            let everything = ProcessInfo.processInfo.environment["UBIQFS_SOAK_DUMP"] != nil
            for operation in record.ops where everything || ids.contains(operation.itemID.rawValue) {
                switch operation {
                case .upsert(let item):
                    lines.append("  \(key) by \(record.deviceName): upsert \(item.name) \(item.id.rawValue.prefix(8)) parent \(item.parent.rawValue.prefix(8)) blocks \((item.blocks ?? []).map { $0.hash.prefix(8) })")
                case .delete(let id):
                    lines.append("  \(key) by \(record.deviceName): delete \(id.rawValue.prefix(8))")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Trees

    private func entries(_ device: TestDevice) throws -> [Entry] {
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let ids = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0.itemID.rawValue) })
        var result: [Entry] = []
        func walk(_ ino: Inode, _ prefix: String) throws {
            for child in try device.core.list(ino, after: 2, limit: 100_000) {
                let path = prefix + String(decoding: child.name, as: UTF8.self)
                result.append(Entry(path: path, ino: child.attributes.ino, kind: child.attributes.kind, mode: child.attributes.permissions, id: ids[child.attributes.ino] ?? "?"))
                if child.attributes.kind == .directory { try walk(child.attributes.ino, path + "/") }
            }
        }
        try walk(Inode.root, "")
        return result.sorted { $0.path < $1.path }
    }

    private func snapshot(_ device: TestDevice) throws -> [String: Node] {
        let rows = try device.metadata.read { db in try ItemRow.fetchAll(db) }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        var result: [String: Node] = [:]
        for entry in try entries(device) {
            let row = try #require(byIno[entry.ino])
            var xattrs: [String: [UInt8]] = [:]
            for name in try device.core.listXattrs(entry.ino).split(separator: 0) {
                xattrs[String(decoding: name, as: UTF8.self)] = try device.core.getXattr(entry.ino, name: Array(name))
            }
            let target = entry.kind == .symlink ? String(decoding: try device.core.readlink(entry.ino), as: UTF8.self) : nil
            result[entry.path] = Node(
                kind: entry.kind, id: entry.id, mode: entry.mode, xattrs: xattrs, target: target,
                size: entry.kind == .file ? row.size : 0, blocks: entry.kind == .file ? row.blockList : []
            )
        }
        return result
    }

    private func allIDs(_ device: TestDevice) throws -> Set<String> {
        Set(try device.metadata.read { db in try String.fetchAll(db, sql: "SELECT id FROM item") })
    }

    private func liveIDs(_ device: TestDevice) throws -> Set<String> {
        Set(try device.metadata.read { db in try String.fetchAll(db, sql: "SELECT id FROM item WHERE deleted = 0 AND ino != ?", arguments: [Inode.root]) })
    }

    private func localFileInodes(_ device: TestDevice) throws -> Set<Inode> {
        Set(try device.metadata.read { db in
            try Inode.fetchAll(db, sql: "SELECT ino FROM item WHERE deleted = 0 AND kind = 'file' AND content = ?", arguments: [ContentState.local.rawValue])
        })
    }

    private func forgetAll(_ device: TestDevice) throws {
        for ino in try device.metadata.read({ db in try Inode.fetchAll(db, sql: "SELECT ino FROM item") }) {
            device.core.forget(ino, count: .max)
        }
    }
}
