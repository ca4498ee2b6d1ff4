import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// A format-1 container is upgraded in place by the first device that reads format 2:
/// nothing is lost, devices of the old version stop with a clear line and keep their
/// changes, and the upgraded container is collected like any format-2 one.
@Suite struct UpgradeTests {
    static func info(_ store: InMemoryStore) async throws -> ContainerInfo {
        try RecordCodec.decode(ContainerInfo.self, from: try await store.get(ContainerLayout.infoKey))
    }

    static func lastRecord(_ store: InMemoryStore) async throws -> JournalRecord {
        let key = try #require(try await store.listAll(prefix: ContainerLayout.journalPrefix).last)
        return try RecordCodec.decode(JournalRecord.self, from: try await store.get(key))
    }

    @Test func aFormatOneContainerIsUpgradedInPlaceWithNothingLost() async throws {
        let store = InMemoryStore()
        var formatOne = SyncConfiguration()
        formatOne.formatTwo = false
        let formatTwo = CollectionTests.formatTwo(grace: .milliseconds(50))
        let a = try await TestDevice(store: store, name: "a", configuration: formatOne)
        let old = try await TestDevice(store: store, name: "old", configuration: formatOne)
        for round in 0..<3 {
            try await a.write("f.bin", CollectionTests.content(UInt64(round)))
            try await a.sync()
        }
        try a.mkdir("d")
        try await a.write("d/small.txt", "small")
        try await a.write("d/gone.txt", "gone")
        try await a.sync()
        try a.remove("d/gone.txt")
        try await a.sync()
        try await old.sync()
        #expect(try await Self.info(store).format == 1)

        // b reads format 2: it upgrades the container, and its first record says so.
        let b = try await TestDevice(store: store, name: "b", configuration: formatTwo)
        #expect(try await Self.info(store).format == 2)
        try await b.sync()
        #expect(try await Self.lastRecord(store).format == 2)
        #expect(try await b.tree() == a.tree())
        let f = try #require(b.inode("f.bin"))
        #expect(try b.core.versions(f).versions.count == 3)
        #expect(try b.core.trash().map(\.path) == ["/d/gone.txt"])

        // A device of the old version stops at the new record, and keeps its change.
        try await old.write("d/small.txt", "changed on old")
        await #expect(throws: SyncError.self) { try await old.sync() }
        #expect(await old.engine.status().lastError?.contains("format 2") == true)
        await old.shutdown()
        await a.shutdown()

        // Updated, both go on in format 2; the old one's change arrives.
        let newOld = try await TestDevice(store: store, name: "old", stateDir: old.stateDir, configuration: formatTwo)
        try await newOld.sync()
        let newA = try await TestDevice(store: store, name: "a", stateDir: a.stateDir, configuration: formatTwo)
        try await newA.write("new.txt", String(repeating: "x", count: 100))
        try await newA.sync()
        #expect(try await Self.lastRecord(store).format == 2)
        try await b.sync()
        #expect(try await b.read("d/small.txt") == "changed on old")
        #expect(try await b.read("new.txt") == String(repeating: "x", count: 100))

        // The upgraded container is collected: format-1 blocks no one names go.
        _ = try await b.engine.setRetention(versions: 0, trash: 0)
        let report = try await b.engine.collect(grace: .milliseconds(50))
        #expect(report.deleted >= 2, "\(report)")
        let fresh = try await TestDevice(store: store, name: "fresh", configuration: formatTwo)
        #expect(try await fresh.tree() == b.tree())
        #expect(try await fresh.readBytes("f.bin") == CollectionTests.content(2))
        for device in [newOld, newA, b, fresh] { await device.shutdown() }
    }
}
