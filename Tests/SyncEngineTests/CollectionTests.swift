import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// Collection of a format-2 container: what nothing within retention names goes, and
/// no record ever names an object that went, whatever writers and collectors do at once.
@Suite struct CollectionTests {
    /// A grace for tests that collect at once: its quarter (rule W's window from a
    /// listing to the commit) still holds on a machine running the whole suite at once.
    static let shortGrace = Duration.milliseconds(400)

    static func formatTwo(grace: Duration = shortGrace) -> SyncConfiguration {
        var configuration = PackTests.formatTwo
        configuration.collectionGrace = grace
        configuration.collectionInterval = .zero
        return configuration
    }

    static func content(_ seed: UInt64, size: Int = 600_000) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        return (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    static func objectBytes(_ store: InMemoryStore) async throws -> Int64 {
        var total: Int64 = 0
        for prefix in [ContainerLayout.blockPrefix, ContainerLayout.packPrefix] {
            total += try await store.listAllObjects(prefix: prefix).reduce(0) { $0 + $1.size }
        }
        return total
    }

    static func objectCount(_ store: InMemoryStore) async throws -> Int {
        var count = 0
        for prefix in [ContainerLayout.blockPrefix, ContainerLayout.packPrefix] {
            count += try await store.listAllObjects(prefix: prefix).count
        }
        return count
    }

    static func waitForList(_ store: InMemoryStore) async throws {
        for _ in 0..<500 where !store.keys.contains(where: { $0.hasSuffix(".condemned") }) { try await Task.sleep(for: .milliseconds(20)) }
        try #require(store.keys.contains { $0.hasSuffix(".condemned") }, "no collector wrote its list")
    }

    @Test func churnIsCollectedDownToWhatRetentionKeeps() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo())
        for round in 0..<8 {
            try await a.write("big.bin", Self.content(UInt64(round)))
            try await a.sync()
        }
        try await a.write("gone.bin", Self.content(100))
        try await a.sync()
        try a.remove("gone.bin")
        try await a.sync()
        let before = try await Self.objectBytes(store)
        #expect(before >= 9 * 600_000)

        // Within the retention (30 days), every version and the trash stay. What goes is
        // only what no record names: on a loaded machine, a push the engine started on its
        // own may meet the next write and be dropped after its pack was put.
        let kept = try await a.engine.collect(grace: .milliseconds(100))
        #expect(kept.live == 600_000 && kept.history == 7 * 600_000 && kept.trash == 600_000, "\(kept)")
        #expect(kept.deletedBytes == kept.garbage && kept.deletedBytes == before - 9 * 600_000, "\(kept)")
        #expect(try await Self.objectBytes(store) == 9 * 600_000)

        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        let report = try await a.engine.collect(grace: .milliseconds(100))
        #expect(report.deleted > 0 && report.deletedBytes == 8 * 600_000, "\(report)")
        // The metrics count both runs and what they freed.
        #expect(a.engine.metrics.collections.value == 2)
        #expect(a.engine.metrics.collectedBytes.value == UInt64(kept.deletedBytes + report.deletedBytes))
        #expect(a.engine.metrics.collectedObjects.value == UInt64(kept.deleted + report.deleted))
        #expect(try await Self.objectBytes(store) == 600_000)
        #expect(store.keys.filter { $0.hasPrefix(ContainerLayout.gcPrefix) }.allSatisfy { $0.hasSuffix(".condemned") })
        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo())
        #expect(try await b.readBytes("big.bin") == Self.content(7))
        #expect(await a.engine.lastCollection() == report)
        await a.shutdown()
        await b.shutdown()
    }

    /// Journal commits wait until a collector's sweep is done: the commit of a push that
    /// decided before the sweep lands after it.
    static func lateCommits(_ store: InMemoryStore) -> HookedCommits {
        HookedCommits(store) { base in
            guard base.keys.contains(where: { $0.hasSuffix(".condemned") }) else { return }
            for _ in 0..<500 where await !swept(base) { try? await Task.sleep(for: .milliseconds(10)) }
        }
    }

    private static func swept(_ base: InMemoryStore) async -> Bool {
        for key in base.keys where key.hasSuffix(".condemned") {
            if let bytes = try? await base.get(key), let list = try? RecordCodec.decode(CondemnedList.self, from: bytes), list.swept == true { return true }
        }
        return false
    }

    @Test func aWriterThatDedupsAgainstACondemnedBlockWritesItAnew() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo(grace: .seconds(1)))
        let b = try await TestDevice(store: Self.lateCommits(store), name: "b", configuration: Self.formatTwo(grace: .seconds(1)))
        try await a.write("x.bin", Self.content(1))
        try await a.sync()
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        try a.remove("x.bin")
        try await a.sync()
        try await b.sync()
        let collection = Task { try await a.engine.collect(grace: .seconds(1)) }
        // Once the list is there, b writes the same bytes: their blocks are condemned. Its
        // commit lands after the sweep, which cannot rescue what it names.
        try await Self.waitForList(store)
        try await b.write("y.bin", Self.content(1))
        try await b.sync()
        let report = try await collection.value
        // x.bin's one pack (its two blocks): b's upload named neither it nor its blocks.
        #expect(report.deleted == 1 && report.rescued == 0, "\(report)")
        let c = try await TestDevice(store: store, name: "c", configuration: Self.formatTwo())
        #expect(try await c.readBytes("y.bin") == Self.content(1))
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func aKilledCollectorLeavesAReadableContainerAndTheLeaseRunsOut() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo(grace: .milliseconds(300)))
        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo(grace: .milliseconds(300)))
        try await a.write("keep.bin", Self.content(1))
        try await a.write("drop.bin", Self.content(2))
        try await a.sync()
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        try a.remove("drop.bin")
        try await a.sync()
        try await b.sync()
        let killed = Task { try await a.engine.collect(grace: .seconds(1)) }
        try await Self.waitForList(store)
        killed.cancel()
        await #expect(throws: SyncError.self) { try await killed.value }
        // Nothing went; the lease is a's until it runs out.
        #expect(try await b.readBytes("keep.bin") == Self.content(1))
        do {
            _ = try await b.engine.collect()
            Issue.record("two collectors held the lease")
        } catch {
            #expect(error.code == .busy)
        }
        // Its lease: twice the grace and three times more.
        try await Task.sleep(for: .seconds(5.5))
        let objects = try await Self.objectCount(store)
        let report = try await b.engine.collect()
        // Every object but keep.bin's pack: drop.bin's, and any of a push dropped because
        // a write came in (none on an idle machine: then exactly one).
        #expect(report.deleted == objects - 1, "drop.bin's pack: \(report)")
        #expect(try await Self.objectBytes(store) == 600_000)
        #expect(try await b.readBytes("keep.bin") == Self.content(1))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aDeviceCollectsByItselfOncePerInterval() async throws {
        let store = InMemoryStore()
        var configuration = Self.formatTwo(grace: Self.shortGrace)
        configuration.collectionInterval = .seconds(1)
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        try await a.write("old.bin", Self.content(1))
        try await a.sync()
        try a.remove("old.bin")
        try await a.sync()
        // A successful cycle a second after the last try starts one (an earlier one, on a
        // slow machine, may have found nothing yet, or only part). Nothing else deletes
        // objects here: the store emptied is the proof (a later run that found nothing may
        // have replaced the report of the one that deleted them), and its report follows
        // the deletes.
        for _ in 0..<100 {
            let reported = await a.engine.lastCollection() != nil
            if try await Self.objectBytes(store) == 0 && reported { break }
            try await a.sync()
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.objectBytes(store) == 0)
        #expect(await a.engine.lastCollection() != nil)
        await a.shutdown()
    }

    @Test func aNewDeviceOfAFormatTwoContainerReplaysItsJournalAndMayCollect() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", checkpointInterval: 2, configuration: Self.formatTwo())
        try await a.write("one", "1")
        try await a.sync()
        try await a.write("two", "2")
        try await a.sync()
        // A checkpoint would not bring the history before it: b replays, and knows it all.
        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo())
        #expect(try await b.engine.collect(grace: .milliseconds(50)).condemned == 0)
        #expect(try await a.engine.collect(grace: .milliseconds(50)).condemned == 0)
        let old = try await TestDevice(store: InMemoryStore(), name: "old", configuration: PackTests.formatOne)
        await #expect(throws: SyncError.self) { try await old.engine.collect() }
        do {
            _ = try await old.engine.collect()
        } catch {
            #expect(error.message.contains("needs a format-2 container"), "\(error)")
        }
        for device in [a, b, old] { await device.shutdown() }
    }
}
