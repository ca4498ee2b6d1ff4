import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Merging
import MetadataStore
@testable import SyncEngine
import Testing

/// Three devices edit a few notes line by line over several rounds, one of them sometimes
/// offline for rounds on end, and sync one after another (issue 40). A model replays the
/// syncs in the same order with `TextMerge` (checked against `git merge-file`) as the
/// oracle: the device whose push comes second merges from the version it last had, or
/// keeps a conflict copy where the edits overlap. Every device must end each round with
/// exactly the model's notes and copies, and every edit merged in must be a version.
/// With merging off (the control) every meeting of two edits is a copy, which the same
/// check must see. `UBIQFS_MERGE_ROUNDS_SEED=N` replays one seed.
@Suite struct MergeRoundsTests {
    static let seeds: [UInt64] = ProcessInfo.processInfo.environment["UBIQFS_MERGE_ROUNDS_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...12)
    static let notes = ["a.md", "b.md", "c.txt"]

    /// What the devices should have: each note's committed text, the texts of its copies,
    /// each device's last synced text of each note, and the edits merged in.
    struct Model {
        var committed: [String: String] = [:]
        var copies: [String: [String]] = [:]
        var base: [[String: String]] = []
        var mergedEdits: [String: [String]] = [:]

        /// Device `index`'s sync, its edits `edits` (note: text): pulled, merged or copied, pushed.
        mutating func sync(_ index: Int, edits: [String: String], merging: Bool) {
            for (note, ours) in edits.sorted(by: { $0.key < $1.key }) {
                let (shared, theirs) = (base[index][note]!, committed[note]!)
                if theirs == shared || theirs == ours {
                    committed[note] = ours
                } else if merging, let merged = TextMerge.merge(base: Array(shared.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)) {
                    committed[note] = String(decoding: merged, as: UTF8.self)
                    mergedEdits[note, default: []].append(ours)
                } else {
                    copies[note, default: []].append(ours)
                }
            }
            for note in MergeRoundsTests.notes { base[index][note] = committed[note] }
        }

        /// The tree every device shows: the notes, and each note's copies by content.
        var tree: [String: [String]] {
            var tree = committed.mapValues { [$0] }
            for (note, texts) in copies { tree["copies of " + note] = texts.sorted() }
            return tree
        }
    }

    static func tree(_ device: TestDevice) async throws -> [String: [String]] {
        var tree: [String: [String]] = [:]
        for (path, text) in try await device.tree() {
            if let note = notes.first(where: { path.hasPrefix(String($0.split(separator: ".")[0]) + " (conflict from ") }) {
                tree["copies of " + note, default: []].append(text)
            } else {
                tree[path] = [text]
            }
        }
        return tree.mapValues { $0.sorted() }
    }

    @Test func notesEditedOnThreeDevicesMergeAsTheModelSays() async throws {
        var (merged, told) = (0, 0)
        for seed in Self.seeds {
            merged += try await play(seed: seed, merging: true)
            told += try await play(seed: seed, merging: false)
        }
        // The runs meet every case: edits merged (on), and, with merging off, rounds where
        // a model that merged would have said another tree than the copies the devices show.
        print("MergeRoundsTests: \(merged) edits merged; with merging off, \(told) rounds a merging model would have told apart")
        if Self.seeds.count > 1 { #expect(merged >= 20 && told >= 15, "\(merged) edits merged; \(told) control rounds told apart") }
    }

    /// Plays one seed. Returns how many edits merged, or with merging off, in how many rounds
    /// the devices' trees differ from those of a model that merges (the check can tell).
    func play(seed: UInt64, merging: Bool) async throws -> Int {
        var rng = SplitMix64(seed: seed)
        let shared = InMemoryStore()
        let stores = (0..<3).map { _ in SoakStore(shared) }
        var devices: [TestDevice] = []
        for (index, name) in ["a", "b", "c"].enumerated() { devices.append(try await TestDevice(store: stores[index], name: name)) }
        if !merging { _ = try await devices[0].engine.setMerge(["text": false]) }
        var model = Model()
        for note in Self.notes {
            let text = (0..<Int.random(in: 6...30, using: &rng)).map { "\(note) line \($0)\n" }.joined()
            try await devices[0].write(note, text)
            model.committed[note] = text
        }
        model.base = Array(repeating: model.committed, count: 3)
        for device in devices { try await device.sync() }
        var offline: Int?
        var pending: [[String: String]] = Array(repeating: [:], count: 3)
        var log: [String] = ["seed \(seed), merging \(merging)"]
        var told = 0
        for round in 1...6 {
            if let away = offline, Bool.random(using: &rng) { offline = nil; stores[away].offline = false }
            else if offline == nil, Int.random(in: 0..<4, using: &rng) == 0 { offline = Int.random(in: 0..<3, using: &rng); stores[offline!].offline = true }
            for index in 0..<3 {
                for note in Self.notes where Int.random(in: 0..<3, using: &rng) == 0 {
                    let text = MergeRandomizedTests.edit(pending[index][note] ?? model.base[index][note]!, "\(devices[index].name)\(round)", &rng)
                    try await devices[index].write(note, text)
                    pending[index][note] = text
                    log.append("round \(round): \(devices[index].name) edits \(note)")
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
                let tree = try await Self.tree(devices[index])
                let differing = Set(tree.keys).union(expected.keys).filter { tree[$0] != expected[$0] }.sorted()
                #expect(differing.isEmpty, """
                    \(log.joined(separator: "\n"))
                    \(devices[index].name) differs from the model in \(differing): \(differing.map { "\($0): \(tree[$0] ?? []) model \(expected[$0] ?? [])" })
                    """)
            }
        }
        // Every edit merged in is a version of its note, on every device.
        for device in devices {
            if let away = offline { stores[away].offline = false }
            try await device.sync()
            for (note, edits) in model.mergedEdits {
                let versions = try device.core.versions(try #require(device.inode(note))).versions
                for edit in edits {
                    #expect(versions.contains { $0.input > 0 && $0.size == Int64(edit.utf8.count) }, "seed \(seed): \(device.name): an edit of \(note) merged in is not a version")
                }
            }
            await device.shutdown()
        }
        return merging ? model.mergedEdits.values.reduce(0) { $0 + $1.count } : told
    }
}
