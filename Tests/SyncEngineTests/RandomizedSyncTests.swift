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
/// `UBIQFS_RANDOM_SEED=<seed> UBIQFS_RANDOM_ROUNDS=<rounds>` replays that batch; it stops
/// at the failing round. A device still offline after the last round comes back in an
/// extra round without changes, and long writers close by the last round, so every batch
/// ends with all devices in one state.
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
/// - conflict copies: exactly the number the model predicts (see `expectedCopies`); with
///   text merging on (three batches of four) an edit that meets the same content is no
///   copy, and one that meets a version committed while its device was offline may be
///   none (the model does not know that version's content), so those count as a range;
/// - long writers (`SoakBatch+Writers`) hold files open across rounds: what their held
///   changes concern is left out of the comparison until they close;
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
    static let environment = ProcessInfo.processInfo.environment
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
