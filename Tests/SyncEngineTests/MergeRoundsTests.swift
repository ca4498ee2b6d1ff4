import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Merging
import MetadataStore
@testable import SyncEngine
import Testing

/// Three devices edit a few notes line by line, or rows of a few SQLite databases, over
/// several rounds, one of them sometimes offline for rounds on end, and sync one after
/// another (issue 40). A model replays the syncs in the same order with an oracle
/// (`TextMerge`, itself checked against `git merge-file`; for databases a three-way merge
/// of rows by key in plain dictionaries): the device whose push comes second merges from
/// the version it last had, or keeps a conflict copy where the edits meet. Every device
/// must end each round with exactly the model's files and copies (databases compared by
/// their rows, each passing SQLite's `integrity_check`), and every edit merged in must be
/// a version. With merging off (the control) every meeting of two edits is a copy, which
/// the same check must see. `UBIQFS_MERGE_ROUNDS_SEED=N` replays one seed.
@Suite struct MergeRoundsTests {
    static let seeds: [UInt64] = ProcessInfo.processInfo.environment["UBIQFS_MERGE_ROUNDS_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...12)

    /// What the devices should have: each file's committed content (in `C`'s canonical
    /// form), the contents of its copies, each device's last synced content of each file,
    /// and the edits merged in.
    struct Model<C: RoundsContent> {
        var committed: [String: String] = [:]
        var copies: [String: [String]] = [:]
        var base: [[String: String]] = []
        var mergedEdits: [String: [String]] = [:]

        /// Device `index`'s sync, its edits `edits` (file: content): pulled, merged or copied, pushed.
        mutating func sync(_ index: Int, edits: [String: String], merging: Bool) {
            for (file, ours) in edits.sorted(by: { $0.key < $1.key }) {
                let (shared, theirs) = (base[index][file]!, committed[file]!)
                if theirs == shared || theirs == ours {
                    committed[file] = ours
                } else if merging, let merged = C.merge(base: shared, ours: ours, theirs: theirs) {
                    committed[file] = merged
                    mergedEdits[file, default: []].append(ours)
                } else {
                    copies[file, default: []].append(ours)
                }
            }
            for file in C.files { base[index][file] = committed[file] }
        }

        /// The tree every device shows: the files, and each file's copies by content.
        var tree: [String: [String]] {
            var tree = committed.mapValues { [$0] }
            for (file, contents) in copies { tree["copies of " + file] = contents.sorted() }
            return tree
        }
    }

    /// A device's files in canonical form, and each file's copies by content.
    static func tree<C: RoundsContent>(_ device: TestDevice, _: C.Type) async throws -> [String: [String]] {
        var tree: [String: [String]] = [:]
        for path in try await device.tree().keys {
            let content = try C.canonical(try await device.readBytes(path))
            if let file = C.files.first(where: { path.hasPrefix(String($0.split(separator: ".")[0]) + " (conflict from ") }) {
                tree["copies of " + file, default: []].append(content)
            } else {
                tree[path] = [content]
            }
        }
        return tree.mapValues { $0.sorted() }
    }

    @Test func notesEditedOnThreeDevicesMergeAsTheModelSays() async throws {
        try await playAll(Notes.self, least: (merged: 20, told: 15))
    }

    @Test func databasesEditedOnThreeDevicesMergeAsTheModelSays() async throws {
        try await playAll(Databases.self, least: (merged: 20, told: 15))
    }

    /// Every seed with merging on, then off. The runs must meet every case: edits merged
    /// (on), and, with merging off, rounds where a model that merged would have said
    /// another tree than the copies the devices show.
    func playAll<C: RoundsContent>(_ content: C.Type, least: (merged: Int, told: Int)) async throws {
        var (merged, told) = (0, 0)
        for seed in Self.seeds {
            merged += try await play(C.self, seed: seed, merging: true)
            told += try await play(C.self, seed: seed, merging: false)
        }
        print("MergeRoundsTests, \(C.self): \(merged) edits merged; with merging off, \(told) rounds a merging model would have told apart")
        if Self.seeds.count > 1 { #expect(merged >= least.merged && told >= least.told, "\(merged) edits merged; \(told) control rounds told apart") }
    }

    /// Plays one seed. Returns how many edits merged, or with merging off, in how many rounds
    /// the devices' trees differ from those of a model that merges (the check can tell).
    func play<C: RoundsContent>(_: C.Type, seed: UInt64, merging: Bool) async throws -> Int {
        var rng = SplitMix64(seed: seed)
        let shared = InMemoryStore()
        let stores = (0..<3).map { _ in SoakStore(shared) }
        var devices: [TestDevice] = []
        for (index, name) in ["a", "b", "c"].enumerated() { devices.append(try await TestDevice(store: stores[index], name: name)) }
        _ = try await devices[0].engine.setMerge([C.setting: merging])
        var model = Model<C>()
        for file in C.files {
            let (content, bytes) = try C.initial(file, &rng)
            try await devices[0].write(file, bytes)
            model.committed[file] = content
        }
        model.base = Array(repeating: model.committed, count: 3)
        // Each device reads every file (as after each round): one edited offline is here.
        for device in devices {
            try await device.sync()
            _ = try await Self.tree(device, C.self)
        }
        var offline: Int?
        var pending: [[String: String]] = Array(repeating: [:], count: 3)
        var log: [String] = ["seed \(seed), merging \(merging)"]
        var told = 0
        for round in 1...6 {
            if let away = offline, Bool.random(using: &rng) { offline = nil; stores[away].offline = false }
            else if offline == nil, Int.random(in: 0..<4, using: &rng) == 0 { offline = Int.random(in: 0..<3, using: &rng); stores[offline!].offline = true }
            for index in 0..<3 {
                for file in C.files where Int.random(in: 0..<3, using: &rng) == 0 {
                    let current = pending[index][file] ?? model.base[index][file]!
                    let (content, bytes) = try C.edit(current, bytes: try await devices[index].readBytes(file), tag: "\(devices[index].name)\(round)", &rng)
                    try await devices[index].write(file, bytes)
                    pending[index][file] = content
                    log.append("round \(round): \(devices[index].name) edits \(file)")
                }
            }
            var order = Array(0..<3)
            order.shuffle(using: &rng)
            var merges = model
            for index in order where index != offline { merges.sync(index, edits: pending[index], merging: true) }
            log.append("round \(round): syncs \(order.map { devices[$0].name }) offline \(offline.map { devices[$0].name } ?? "none")")
            for index in order where index != offline {
                try await devices[index].sync()
                model.sync(index, edits: pending[index], merging: merging)
                pending[index] = [:]
            }
            for index in order where index != offline {
                try await devices[index].sync()
                model.base[index] = model.committed
            }
            let expected = model.tree
            if !merging && merges.tree != expected { told += 1 }
            for index in 0..<3 where index != offline {
                let tree = try await Self.tree(devices[index], C.self)
                let differing = Set(tree.keys).union(expected.keys).filter { tree[$0] != expected[$0] }.sorted()
                #expect(differing.isEmpty, """
                    \(log.joined(separator: "\n"))
                    \(devices[index].name) differs from the model in \(differing): \(differing.map { "\($0): \(tree[$0] ?? []) model \(expected[$0] ?? [])" })
                    """)
            }
        }
        // Every edit merged in is a version of its file, on every device.
        for device in devices {
            if let away = offline { stores[away].offline = false }
            try await device.sync()
            for (file, edits) in model.mergedEdits {
                let inputs = try device.core.versions(try #require(device.inode(file))).versions.filter { $0.input > 0 }
                #expect(inputs.count >= edits.count, "seed \(seed): \(device.name): \(edits.count) edits of \(file) merged in, \(inputs.count) inputs")
                for edit in edits where C.self == Notes.self {
                    #expect(inputs.contains { $0.size == Int64(edit.utf8.count) }, "seed \(seed): \(device.name): an edit of \(file) merged in is not a version")
                }
            }
            await device.shutdown()
        }
        return merging ? model.mergedEdits.values.reduce(0) { $0 + $1.count } : told
    }
}
