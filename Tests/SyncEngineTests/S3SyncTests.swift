import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import S3Store
import SeaweedFSFixture
import SyncEngine
import Testing

/// Devices sharing a container in a real S3 service (SeaweedFS on 127.0.0.1): they
/// converge, stream large files, survive the service going away, and never lose a commit
/// when they race.
@Suite(.serialized) struct S3SyncTests {
    /// On both real S3 services of the tests: SeaweedFS and Ceph's RADOS Gateway.
    static func store(_ service: String, prefix: String) async throws -> S3Store {
        service == "ceph"
            ? try await CephServer.shared().store(prefix: prefix, container: "team")
            : try await SeaweedServer.shared().store(prefix: prefix, container: "team")
    }

    @Test(arguments: ["seaweedfs", "ceph"]) func devicesConvergeOverS3AndAFreshDeviceJoins(service: String) async throws {
        let prefix = "sync-\(UUID().uuidString.prefix(8))"
        let a = try await TestDevice(store: Self.store(service, prefix: prefix), name: "a")
        let b = try await TestDevice(store: Self.store(service, prefix: prefix), name: "b")
        try a.mkdir("docs")
        try await a.write("docs/plan.txt", "plan from a")
        // Three blocks, read back from the middle first: streamed, verified per block.
        // (Text, so that comparing trees as strings stays fast.)
        let big: [UInt8] = (0..<(10 << 20)).map { (index: Int) -> UInt8 in UInt8(97 + (index &* 7 &+ (index >> 20)) % 26) }
        try await a.write("big.bin", big)
        try await b.write("from-b.txt", "b was here")
        try await a.sync()
        try await b.sync()
        try await a.sync()
        let ino = try #require(b.inode("big.bin"))
        let handle = try await b.open(ino, flags: O_RDONLY)
        let middle = try await b.core.read(handle: handle, size: 1000, offset: 6 << 20)
        #expect(middle == Array(big[(6 << 20)..<((6 << 20) + 1000)]))
        b.core.release(handle: handle)
        #expect(try await a.tree() == b.tree())

        let c = try await TestDevice(store: Self.store(service, prefix: prefix), name: "c")
        #expect(try await c.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
        await c.shutdown()
    }

    @Test func anEncryptedContainerOverS3HoldsNothingReadable() async throws {
        let server = try await SeaweedServer.shared()
        let prefix = "enc-\(UUID().uuidString.prefix(8))"
        let a = try await TestDevice(store: server.store(prefix: prefix, container: "sealed"), name: "a", configuration: EncryptionTests.configuration(encrypt: true))
        try a.mkdir("quixotic-folder")
        try await a.write("quixotic-folder/small.txt", String(repeating: "PLAINTEXT-MARKER ", count: 200))
        let big = CollectionTests.content(3, size: 1_500_000)
        try await a.write("quixotic-folder/big.bin", big)
        try await a.sync()
        // The bucket as its operator reads it, through a store of its own.
        let raw = try await server.store(prefix: prefix, container: "sealed")
        for key in try await raw.listAll(prefix: "") {
            let text = String(decoding: try await raw.get(key), as: UTF8.self)
            #expect(!text.contains("quixotic") && !text.contains("PLAINTEXT-MARKER"), "\(key)")
        }
        let b = try await TestDevice(store: server.store(prefix: prefix, container: "sealed"), name: "b", configuration: EncryptionTests.configuration())
        #expect(try await b.readBytes("quixotic-folder/big.bin") == big)
        #expect(try await b.read("quixotic-folder/small.txt") == String(repeating: "PLAINTEXT-MARKER ", count: 200))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aFormatTwoContainerIsCollectedOverS3() async throws {
        let server = try await SeaweedServer.shared()
        let prefix = "gc-\(UUID().uuidString.prefix(8))"
        let store = try await server.store(prefix: prefix, container: "gc")
        let configuration = CollectionTests.formatTwo(grace: .milliseconds(300))
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        for round in 0..<3 {
            try await a.write("big.bin", CollectionTests.content(UInt64(round)))
            try await a.sync()
        }
        for index in 0..<20 { try await a.write("small\(index)", CollectionTests.content(UInt64(100 + index), size: 3000)) }
        try await a.sync()
        for index in 0..<20 { try a.remove("small\(index)") }
        try await a.sync()
        // S3 lists each object's size: the report's bytes are the objects'. What the
        // versions and the trash name is kept; only what nothing names may go (a pack
        // of a push that lost its race under load, say).
        let kept = try await a.engine.collect(grace: .milliseconds(300))
        #expect(kept.live == 600_000 && kept.history == 2 * 600_000 && kept.trash == 20 * 3000, "\(kept)")
        #expect(kept.stored - kept.garbage == 3 * 600_000 + 20 * 3000 && kept.deletedBytes <= kept.garbage, "\(kept)")
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        let report = try await a.engine.collect(grace: .milliseconds(300))
        // The two old versions' packs and the small files' pack.
        #expect(report.deleted == 3 && report.deletedBytes == 2 * 600_000 + 20 * 3000, "\(report)")
        let b = try await TestDevice(store: try await server.store(prefix: prefix, container: "gc"), name: "b", configuration: configuration)
        #expect(try await b.readBytes("big.bin") == CollectionTests.content(2))
        await a.shutdown()
        await b.shutdown()
    }

    @Test func theServiceGoingAwayLosesNothing() async throws {
        let server = SeaweedServer()
        try await server.start()
        defer { server.stop() }
        var configuration = SyncConfiguration()
        configuration.storeTimeout = .seconds(20)
        let a = try await TestDevice(store: server.store(container: "outage"), name: "a", configuration: configuration)
        let b = try await TestDevice(store: server.store(container: "outage"), name: "b", configuration: configuration)
        try await a.write("before.txt", "synced before")
        try await a.sync()
        try await b.sync()
        server.stop()
        try await a.write("during.txt", "written while the service was down")
        try a.remove("before.txt")
        await #expect(throws: SyncError.self) { try await a.sync() }
        #expect(await a.engine.status().state == "offline")
        // b keeps what it had: an unreachable service is not a deleted one.
        await #expect(throws: SyncError.self) { try await b.sync() }
        #expect(b.inode("before.txt") != nil)
        #expect(try await a.read("during.txt") == "written while the service was down")
        try await server.start()
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["during.txt": "written while the service was down"])
        #expect(await a.engine.status().state == "online")
        await a.shutdown()
        await b.shutdown()
    }

    @Test func racingCommitsNeverLoseARecord() async throws {
        let server = try await SeaweedServer.shared()
        let prefix = "race-\(UUID().uuidString.prefix(8))"
        var devices: [TestDevice] = []
        for name in ["r1", "r2", "r3", "r4"] {
            devices.append(try await TestDevice(store: server.store(prefix: prefix, container: "c"), name: name))
        }
        // Every device commits five times as fast as it can, all at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices {
                group.addTask {
                    for index in 0..<5 {
                        try await device.write("\(device.name)-\(index).txt", "\(device.name) \(index)")
                        try await device.sync()
                    }
                }
            }
            try await group.waitForAll()
        }
        for device in devices { try await device.sync() }
        let expected = Dictionary(uniqueKeysWithValues: devices.flatMap { device in
            (0..<5).map { ("\(device.name)-\($0).txt", "\(device.name) \($0)") }
        })
        for device in devices {
            #expect(try await device.tree() == expected)
        }
        let store = try await server.store(prefix: prefix, container: "c")
        let journal = try await store.listAll(prefix: ContainerLayout.journalPrefix)
        #expect(journal.count == 20)
        // The metrics count each record once, however many races its device lost first,
        // and time each commit.
        #expect(devices.map { $0.engine.metrics.commits.value }.reduce(0, +) == 20)
        #expect(devices.allSatisfy { $0.engine.metrics.commitDurations.snapshot.cumulative.last == $0.engine.metrics.commits.value })
        for device in devices { await device.shutdown() }
    }
}
