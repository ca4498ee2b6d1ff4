import ContainerCrypto
import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// A container of an older format is upgraded in place by the first device that reads
/// the current one: nothing is lost, devices of the old version stop with a clear line
/// and keep their changes, and the upgraded container is collected like any other.
@Suite struct UpgradeTests {
    static func info(_ store: InMemoryStore) async throws -> ContainerInfo {
        try RecordCodec.decode(ContainerInfo.self, from: try await store.get(ContainerLayout.infoKey))
    }

    /// The newest record, through a device's cipher when the container is encrypted.
    static func lastRecord(_ store: InMemoryStore, encrypted: Bool = false) async throws -> JournalRecord {
        let key = try #require(try await store.listAll(prefix: ContainerLayout.journalPrefix).last)
        var bytes = try await store.get(key)
        if encrypted {
            let info = try await Self.info(store)
            let master = try await Keyring(store: store, container: info.id, cost: 10).unlock(passphrase: EncryptionTests.passphrase).master
            bytes = try ContainerCipher(masterBytes: master, container: info.id).open(object: bytes, key: key)
        }
        return try RecordCodec.decode(JournalRecord.self, from: bytes)
    }

    /// The containers earlier releases made: formats 1 to 4, plain and encrypted.
    static let origins: [(format: Int, encrypted: Bool)] = [(1, false), (2, false), (2, true), (3, false), (3, true), (4, false), (4, true)]

    static func configuration(newest: Int, encrypted: Bool) -> SyncConfiguration {
        var configuration = encrypted ? EncryptionTests.configuration(encrypt: true) : CollectionTests.formatTwo(grace: CollectionTests.shortGrace)
        configuration.collectionGrace = CollectionTests.shortGrace
        configuration.newestFormat = newest
        return configuration
    }

    @Test(arguments: origins.indices) func anOlderContainerIsUpgradedInPlaceWithNothingLost(origin: Int) async throws {
        let (from, encrypted) = Self.origins[origin]
        let store = InMemoryStore()
        let old = Self.configuration(newest: from, encrypted: encrypted)
        let new = Self.configuration(newest: ContainerInfo.currentFormat, encrypted: encrypted)
        let current = ContainerInfo.currentFormat
        let a = try await TestDevice(store: store, name: "a", configuration: old)
        let oldDevice = try await TestDevice(store: store, name: "old", configuration: old)
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
        try await oldDevice.sync()
        #expect(try await Self.info(store).format == from)
        // What merges is format 4's setting: an older container's is not changed.
        if from < 4 { await #expect(throws: SyncError.self) { _ = try await a.engine.setMerge(["text": false]) } }

        // b reads the current format: it upgrades the container, and its first record says so.
        let b = try await TestDevice(store: store, name: "b", configuration: new)
        #expect(try await Self.info(store).format == current)
        try await b.sync()
        #expect(try await Self.lastRecord(store, encrypted: encrypted).format == current)
        #expect(try await b.tree() == a.tree())
        let f = try #require(b.inode("f.bin"))
        #expect(try b.core.versions(f).versions.count == 3)
        #expect(try b.core.trash().map(\.path) == ["/d/gone.txt"])
        // Links are what the new format carries.
        try b.link("d/small.txt", "small-link.txt")
        try await b.sync()

        // A device of the old version stops at the new record, and keeps its change.
        try await oldDevice.write("d/small.txt", "changed on old")
        await #expect(throws: SyncError.self) { try await oldDevice.sync() }
        #expect(await oldDevice.engine.status().lastError?.contains("format \(current) is not supported") == true)
        await oldDevice.shutdown()
        await a.shutdown()
        // Nor does it mount the container again.
        await #expect(throws: SyncError.self) { _ = try await TestDevice(store: store, name: "old", configuration: old) }

        // Updated, both go on in the new format; the old one's change arrives.
        let newOld = try await TestDevice(store: store, name: "old", stateDir: oldDevice.stateDir, configuration: new)
        try await newOld.sync()
        #expect(try await newOld.read("small-link.txt") == "changed on old")
        let newA = try await TestDevice(store: store, name: "a", stateDir: a.stateDir, configuration: new)
        try await newA.write("new.txt", String(repeating: "x", count: 100))
        try await newA.sync()
        #expect(try await Self.lastRecord(store, encrypted: encrypted).format == current)
        try await b.sync()
        #expect(try await b.read("d/small.txt") == "changed on old")
        #expect(try await b.read("small-link.txt") == "changed on old")
        #expect(try await b.read("new.txt") == String(repeating: "x", count: 100))

        // The upgraded container is collected: blocks no one names go.
        _ = try await b.engine.setRetention(versions: 0, trash: 0)
        let report = try await b.engine.collect(grace: CollectionTests.shortGrace)
        #expect(report.deleted >= 2, "\(report)")
        // The new format's setting is every device's.
        #expect(try await b.engine.setMerge(["json": true, "text": false]).merging == MergeKinds(text: false, sqlite: false, json: true))
        await #expect(throws: SyncError.self) { _ = try await b.engine.setMerge(["video": true]) }
        let fresh = try await TestDevice(store: store, name: "fresh", configuration: new)
        #expect(try await fresh.engine.settings().merging == MergeKinds(text: false, sqlite: false, json: true))
        #expect(try await fresh.tree() == b.tree())
        #expect(fresh.inode("small-link.txt") == fresh.inode("d/small.txt"))
        #expect(try await fresh.readBytes("f.bin") == CollectionTests.content(2))
        for device in [newOld, newA, b, fresh] { await device.shutdown() }
    }
}
