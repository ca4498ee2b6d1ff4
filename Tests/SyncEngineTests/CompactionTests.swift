import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// Journal compaction (format 2): records before a checkpoint go, their history lives on
/// in a history object, and a device whose next record went rejoins from the checkpoint
/// with every local change kept.
@Suite struct CompactionTests {
    static func configuration() -> SyncConfiguration {
        var configuration = CollectionTests.formatTwo(grace: CollectionTests.shortGrace)
        configuration.gapCheckInterval = .zero
        return configuration
    }

    /// Two runs: the first sees (or writes) the checkpoint at the head, the second
    /// compacts up to it.
    static func compact(_ device: TestDevice) async throws -> CollectionReport {
        _ = try await device.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        return try await device.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
    }

    /// How many journal records are tombstones, and how many are records.
    static func journal(_ store: InMemoryStore) async throws -> (tombstones: Int, records: Int) {
        var counts = (tombstones: 0, records: 0)
        for key in try await store.listAll(prefix: ContainerLayout.journalPrefix) {
            let record = try RecordCodec.decode(JournalRecord.self, from: try await store.get(key))
            if record.compacted != nil { counts.tombstones += 1 } else { counts.records += 1 }
        }
        return counts
    }

    static func history(_ device: TestDevice, _ path: String) throws -> [String] {
        let ino = try #require(device.inode(path))
        return try device.core.versions(ino).versions.map { "\($0.seq) \($0.device) \($0.size)" }
    }

    @Test func compactedRecordsLeaveTheSameHistoryToADeviceThatJoinsLater() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration())
        for round in 0..<3 {
            try await a.write("f.txt", String(repeating: "v\(round)", count: round + 1))
            try await a.sync()
        }
        try a.mkdir("d")
        try await a.write("d/x.txt", "inside")
        try await a.sync()
        try a.remove("d/x.txt")
        try a.remove("d")
        try await a.sync()
        let head = try #require(store.keys.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.journalPrefix) }.max())

        let first = try await a.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        #expect(first.compactedThrough == nil && store.keys.contains(ContainerLayout.checkpointKey(head)))
        // Before any compaction a new device replays the journal (a checkpoint would not
        // bring the history before it), and lists what a lists.
        let early = try await TestDevice(store: store, name: "early", configuration: Self.configuration())
        #expect(try Self.history(early, "f.txt") == Self.history(a, "f.txt"))
        #expect(try early.core.trash() == a.core.trash())
        let report = try await a.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        #expect(report.compactedThrough == head && report.recordsCompacted == Int(head), "\(report)")
        #expect(try await Self.journal(store) == (tombstones: Int(head), records: 0))
        #expect(store.keys.filter { $0.hasPrefix(ContainerLayout.historyPrefix) } == [ContainerLayout.historyKey(first: 1, last: head)])
        // f.txt's newest version is the checkpoint's content: said once, by the checkpoint.
        let history = try RecordCodec.decode(HistoryObject.self, from: try await store.get(ContainerLayout.historyKey(first: 1, last: head)))
        let versionsOfA = try Self.history(a, "f.txt")
        #expect(history.versions.count == 4 && history.versions.filter { $0.blocks == nil }.count == 1, "\(history.versions) a: \(versionsOfA)")

        // A new device lists what a lists, and may collect in turn.
        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration())
        #expect(try await c.tree() == a.tree())
        #expect(try Self.history(c, "f.txt") == Self.history(a, "f.txt"))
        let versionsOfC = try Self.history(c, "f.txt")
        #expect(versionsOfC.count == 3, "\(versionsOfC)")
        #expect(try c.core.trash() == a.core.trash())
        #expect(try c.core.trash().map(\.path) == ["/d"])
        #expect(try c.core.restoreFromTrash(path: "/d/x.txt") == "/d/x.txt")
        #expect(try await c.read("d/x.txt") == "inside")
        try await c.sync()
        try await a.sync()
        #expect(try await a.read("d/x.txt") == "inside")
        _ = try await c.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        for device in [a, c, early] { await device.shutdown() }
    }

    @Test func aDeviceOfflinePastTheHorizonRejoinsAndKeepsEveryLocalChange() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration())
        // b never lists checkpoints on its own: the tombstone at its next record tells it.
        var unchecked = Self.configuration()
        unchecked.gapCheckInterval = .seconds(3600)
        let b = try await TestDevice(store: store, name: "b", configuration: unchecked)
        try a.mkdir("d")
        try await a.write("d/x.txt", "x")
        try await a.write("f.txt", "base")
        try await a.write("g.txt", "base")
        try await a.sync()
        try await b.sync()

        // b works while it hears nothing; a goes on and compacts the journal meanwhile.
        try await b.write("f.txt", "b's edit")
        try await b.write("g.txt", "b's edit")
        try await b.write("new.txt", "b's file")
        try await a.write("f.txt", "a's edit")
        try a.remove("g.txt")
        try await a.write("h.txt", "a's file")
        try a.rename("d", "e")
        try await a.sync()
        let report = try await Self.compact(a)
        #expect(report.compactedThrough != nil, "\(report)")
        #expect(try await Self.journal(store).records == 0)

        try await b.sync()
        try await a.sync()
        try await b.sync()
        let tree = try await a.tree()
        #expect(try await b.tree() == tree)
        #expect(tree["f.txt"] == "a's edit" && tree["g.txt"] == "b's edit" && tree["new.txt"] == "b's file")
        #expect(tree["h.txt"] == "a's file" && tree["e/x.txt"] == "x" && tree["d"] == nil)
        #expect(tree.filter { $0.key.hasPrefix("f (conflict from b") }.values.first == "b's edit", "\(tree)")
        // b's history of the compacted records is a's.
        #expect(try Self.history(b, "h.txt") == Self.history(a, "h.txt"))
        #expect(try b.core.trash().map(\.path) == a.core.trash().map(\.path))
        for device in [a, b] { await device.shutdown() }
    }

    @Test func aCompactionCutShortLeavesAJournalEveryDeviceFollowsAndTheNextRunFinishesIt() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration())
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration())
        for index in 0..<6 {
            try await a.write("file\(index).txt", "\(index)")
            try await a.sync()
            if index == 3 { try await b.sync() }
        }
        let records = try await store.listAll(prefix: ContainerLayout.journalPrefix)
        var saved: [String: [UInt8]] = [:]
        for key in records { saved[key] = try await store.get(key) }
        _ = try await Self.compact(a)
        #expect(try await Self.journal(store) == (tombstones: records.count, records: 0))
        // As if killed after the two oldest: the rest are still records.
        for key in records.dropFirst(2) { try await store.put(key, saved[key]!) }

        // b (at 4) follows the records still there; a new device joins from the checkpoint.
        try await b.sync()
        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration())
        let tree = try await a.tree()
        #expect(try await b.tree() == tree)
        #expect(try await c.tree() == tree)

        let next = try await a.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        #expect(next.recordsCompacted == records.count - 2, "\(next)")
        #expect(try await Self.journal(store).records == 0, "every record is entombed")
        try await a.write("after.txt", "after")
        try await a.sync()
        for device in [b, c] {
            try await device.sync()
            #expect(try await device.read("after.txt") == "after")
        }
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func aDeviceWhoseNextRecordIsGoneRejoinsFromTheNewestCheckpoint() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration())
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration())
        try await a.write("f.txt", "one")
        try await a.sync()
        try await b.sync()
        try await b.write("mine.txt", "b's")
        for round in 0..<3 {
            try await a.write("f.txt", "round \(round)")
            try await a.sync()
        }
        _ = try await Self.compact(a)
        // Records lost another way than by compaction (a store restored from an old
        // backup, say): what the pull finds is no record, and a checkpoint after it.
        for key in try await store.listAll(prefix: ContainerLayout.journalPrefix) { try await store.delete(key) }
        try await b.sync()
        try await a.sync()
        #expect(try await b.tree() == a.tree())
        #expect(try await a.read("mine.txt") == "b's")
        #expect(try await a.read("f.txt") == "round 2")
        for device in [a, b] { await device.shutdown() }
    }

    @Test func aForgedHistoryObjectIsRefusedAndTheDeviceStillJoins() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration())
        try await a.write("f.txt", "one")
        try await a.sync()
        try await a.write("f.txt", "two")
        try await a.sync()
        _ = try await Self.compact(a)
        let key = try #require(store.keys.first { $0.hasPrefix(ContainerLayout.historyPrefix) })
        var json = try #require(try JSONSerialization.jsonObject(with: Data(try await store.get(key))) as? [String: Any])
        var versions = try #require(json["versions"] as? [[String: Any]])
        versions[0]["size"] = -5
        json["versions"] = versions
        try await store.put(key, Array(try JSONSerialization.data(withJSONObject: json)))

        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration())
        #expect(try await c.read("f.txt") == "two")
        #expect(try Self.history(c, "f.txt").count == 1)
        #expect(await c.engine.status().errors.contains { $0.contains("\(key): a version") })

        try await store.put(key, Array("not json".utf8))
        let d = try await TestDevice(store: store, name: "d", configuration: Self.configuration())
        #expect(try await d.read("f.txt") == "two")
        // Without the history before its checkpoint, d does not collect, and says why.
        do {
            _ = try await d.engine.collect(grace: CollectionTests.shortGrace)
            Issue.record("a device without the history collected")
        } catch {
            #expect(error.code == .invalid && error.message.contains("started from checkpoint"), "\(error)")
        }
        for device in [a, c, d] { await device.shutdown() }
    }
}
