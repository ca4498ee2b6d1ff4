import Foundation
import Testing
import ContainerStore
import ItemModel

/// The fault injector does what its description says, reproducibly.
@Suite struct FaultyStoreTests {
    @Test func faultsParseAndRefuseNonsense() throws {
        let faults = try StoreFaults(parsing: "latency=250ms, bandwidth=2M,errors=0.25,hang,blocks,seed=9")
        #expect(faults.latency == .milliseconds(250))
        #expect(faults.bytesPerSecond == 2 << 20)
        #expect(faults.errorRate == 0.25 && faults.hang && faults.blocksOnly && faults.seed == 9)
        #expect(try StoreFaults(parsing: "latency=1.5").latency == .milliseconds(1500))
        for bad in ["latency", "errors=2", "bandwidth=fast", "explode", "latency=-1s"] {
            #expect(throws: StoreError.self) { try StoreFaults(parsing: bad) }
        }
    }

    @Test func errorsAreSeededAndLatencyAndBandwidthAreFelt() async throws {
        func failures(seed: UInt64) async throws -> [Int] {
            let store = FaultyStore(InMemoryStore(), faults: try StoreFaults(parsing: "errors=0.3,seed=\(seed)"))
            var failed: [Int] = []
            for index in 0..<200 {
                do { _ = try await store.exists("blocks/x") } catch {
                    #expect(error.code == .unreachable)
                    failed.append(index)
                }
            }
            return failed
        }
        let first = try await failures(seed: 7)
        #expect((30...90).contains(first.count))
        #expect(try await failures(seed: 7) == first)
        #expect(try await failures(seed: 8) != first)

        let slow = FaultyStore(InMemoryStore(), faults: try StoreFaults(parsing: "latency=100ms,bandwidth=1M,blocks"))
        try await slow.put("blocks/b", [UInt8](repeating: 1, count: 200_000))
        try await slow.put("journal/1", [1])
        var started = ContinuousClock.now
        _ = try await slow.get("blocks/b")
        // 100 ms of latency and 200 KB at 1 MiB/s.
        #expect(ContinuousClock.now - started >= .milliseconds(280))
        started = ContinuousClock.now
        _ = try await slow.get("journal/1")
        #expect(ContinuousClock.now - started < .milliseconds(90))
    }

    @Test func aHangEndsWhenTheFaultsAreLifted() async throws {
        let base = InMemoryStore()
        try await base.put("k", [1])
        let store = FaultyStore(base, faults: try StoreFaults(parsing: "hang"))
        let call = Task { try await store.get("k") }
        try await Task.sleep(for: .milliseconds(300))
        store.faults = StoreFaults()
        // The call that was hanging goes through, as if the network came back.
        #expect(try await call.value == [1])
    }

    @Test func aHangEndsWhenTheCallerGivesUp() async throws {
        let store = FaultyStore(InMemoryStore(), faults: try StoreFaults(parsing: "hang"))
        let call = Task { try await store.get("container.json") }
        try await Task.sleep(for: .milliseconds(100))
        call.cancel()
        do {
            _ = try await call.value
            Issue.record("a hung call returned")
        } catch let error as StoreError {
            #expect(error.code == .unreachable)
        }
    }
}
