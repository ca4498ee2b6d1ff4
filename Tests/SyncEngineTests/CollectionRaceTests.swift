import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// Collectors race writers that dedup against what the collectors condemn (the same
/// contents come back again and again, with retention 0 so there is much garbage), and
/// are killed at random points: a fresh device must still read every file.
@Suite struct CollectionRaceTests {
    static let pool: [[UInt8]] = (0..<4).map { CollectionTests.content(UInt64($0), size: 300_000) }
        + (4..<7).map { CollectionTests.content(UInt64($0), size: 5_000) } + [Array("tiny".utf8)]

    @Test(arguments: [UInt64(7), 1_234_567])
    func collectorsRacingWritersNeverLoseAnObjectARecordNames(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let store = InMemoryStore()
        let configuration = CollectionTests.formatTwo(grace: .milliseconds(300))
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        let b = try await TestDevice(store: store, name: "b", configuration: configuration)
        let c = try await TestDevice(store: store, name: "c", configuration: configuration)
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        var collected = 0
        for _ in 0..<10 {
            let plans = [a, b].map { device in (device, (0..<6).map { _ in (Int(random.next() % 6), Int(random.next() % UInt64(Self.pool.count + 1))) }) }
            let killAfter = random.next() % 3 == 0 ? Int(random.next() % 500) : nil
            let collector = Task { () -> CollectionReport? in
                do { return try await c.engine.collect(grace: .milliseconds(300)) } catch { return nil }
            }
            if let killAfter {
                Task {
                    try? await Task.sleep(for: .milliseconds(killAfter))
                    collector.cancel()
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (device, steps) in plans {
                    group.addTask {
                        for (file, content) in steps {
                            // One past the pool: delete the file.
                            if content == Self.pool.count {
                                try? device.remove("f\(file)")
                            } else {
                                try await device.write("f\(file)", Self.pool[content])
                            }
                            try await device.sync()
                        }
                    }
                }
                try await group.waitForAll()
            }
            if let report = await collector.value { collected += report.deleted }
            for device in [a, b, c] { try await device.sync() }
        }
        for device in [a, b, c] { try await device.sync() }
        #expect(collected > 0, "no collection ever deleted anything: the test tests nothing")
        let fresh = try await TestDevice(store: store, name: "fresh", configuration: configuration)
        let expected = try await a.tree()
        #expect(try await fresh.tree() == expected)
        #expect(try await b.tree() == expected)
        for device in [a, b, c, fresh] { await device.shutdown() }
    }
}
