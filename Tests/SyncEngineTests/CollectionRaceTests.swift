import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// Collectors race writers that dedup against what the collectors condemn (the same
/// contents come back again and again, with retention 0 so there is much garbage),
/// compact the journal past a device that is offline for rounds at a time (it rejoins
/// with its changes), repack packs that writes left mostly garbage, and are killed at
/// random points: a fresh device must still read every file, and every change the
/// offline device made must be there.
@Suite struct CollectionRaceTests {
    static let pool: [[UInt8]] = (0..<4).map { CollectionTests.content(UInt64($0), size: 300_000) }
        + (4..<10).map { CollectionTests.content(UInt64($0), size: 5_000) } + [Array("tiny".utf8)]

    @Test(arguments: [UInt64(7), 1_234_567])
    func collectorsRacingWritersNeverLoseAnObjectARecordNames(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let store = InMemoryStore()
        var configuration = CollectionTests.formatTwo(grace: .milliseconds(300))
        configuration.gapCheckInterval = .zero
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        let b = try await TestDevice(store: store, name: "b", configuration: configuration)
        let c = try await TestDevice(store: store, name: "c", configuration: configuration)
        let offline = try await TestDevice(store: store, name: "offline", configuration: configuration)
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        var (collected, compacted, repacked, written) = (0, 0, 0, [String: [UInt8]]())
        for round in 0..<10 {
            // The offline device writes files of its own and edits shared ones; it syncs
            // every fourth round, so compactions pass it by.
            for step in 0..<2 {
                let name = "offline-\(round)-\(step)"
                written[name] = CollectionTests.content(random.next(), size: Int(random.next() % 3) * 100_000 + 500)
                try await offline.write(name, written[name]!)
            }
            try await offline.write("f\(random.next() % 6)", Self.pool[Int(random.next() % UInt64(Self.pool.count))])
            if round % 4 == 3 { try await offline.sync() }
            // Four small files in one pack, three of them deleted a round later: a pack a
            // quarter named for the next collector to repack.
            for index in 0..<4 { try await a.write("g\(round)-\(index)", CollectionTests.content(random.next(), size: 5_000)) }
            try await a.sync()
            for index in 1..<4 where round > 0 { try? a.remove("g\(round - 1)-\(index)") }
            // Half the steps push with the next one, so packs hold several small files and
            // later writes leave them partly garbage (repacked).
            let plans = [a, b].map { device in
                (device, (0..<6).map { step in (Int(random.next() % 6), Int(random.next() % UInt64(Self.pool.count + 1)), step == 5 || random.next() % 2 == 0) })
            }
            let killAfter = random.next() % 3 == 0 ? Int(random.next() % 500) : nil
            let collector = Task { () -> CollectionReport? in
                do { return try await c.engine.collect(grace: .milliseconds(300), horizon: .zero) } catch { return nil }
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
                        for (file, content, push) in steps {
                            // One past the pool: delete the file.
                            if content == Self.pool.count {
                                try? device.remove("f\(file)")
                            } else {
                                try await device.write("f\(file)", Self.pool[content])
                            }
                            if push { try await device.sync() }
                        }
                    }
                }
                try await group.waitForAll()
            }
            if let report = await collector.value {
                collected += report.deleted
                compacted += report.recordsCompacted ?? 0
                repacked += report.repacked ?? 0
            }
            for device in [a, b, c] { try await device.sync() }
        }
        for device in [offline, a, b, c, offline] { try await device.sync() }
        #expect(collected > 0, "no collection ever deleted anything: the test tests nothing")
        #expect(compacted > 0, "no collection ever compacted the journal: the test tests nothing")
        #expect(repacked > 0, "no collection ever repacked a pack: the test tests nothing")
        let fresh = try await TestDevice(store: store, name: "fresh", configuration: configuration)
        let expected = try await a.tree()
        #expect(try await fresh.tree() == expected)
        #expect(try await b.tree() == expected)
        #expect(try await offline.tree() == expected)
        for (name, content) in written { #expect(try await fresh.readBytes(name) == content, "\(name)") }
        for device in [a, b, c, offline, fresh] { await device.shutdown() }
    }
}
