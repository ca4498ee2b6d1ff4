import ContainerStore
import Foundation
@testable import SyncEngine
import Synchronization
import Testing

/// `TransferGate`: how many transfers run at once, in which order, at what pace, and how
/// throttling lowers and raises the limit.
@Suite struct TransferGateTests {
    /// The most transfers seen running at once.
    final class Peak: Sendable {
        private let state = Mutex((now: 0, peak: 0))
        func enter() { state.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) } }
        func leave() { state.withLock { $0.now -= 1 } }
        var peak: Int { state.withLock { $0.peak } }
    }

    /// Values appended from concurrent tasks.
    final class Log<T: Sendable>: Sendable {
        private let items = Mutex<[T]>([])
        func append(_ item: T) { items.withLock { $0.append(item) } }
        var all: [T] { items.withLock { $0 } }
    }

    @Test func atMostTheLimitRunAtOnceAndTheyOverlapUpToIt() async throws {
        let gate = TransferGate(.init(transfers: 6, bytesInFlight: 1 << 30), congestion: nil)
        let peak = Peak()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<60 {
                group.addTask {
                    try await gate.run(bytes: 10) { () throws(SyncError) in
                        peak.enter()
                        try? await Task.sleep(for: .milliseconds(20))
                        peak.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(peak.peak == 6)
        let snapshot = gate.snapshot
        #expect(snapshot.done == 60 && snapshot.doneBytes == 600 && snapshot.running == 0 && snapshot.queued == 0)
    }

    @Test func bytesInFlightBoundWhatRunsButALargeTransferStillRunsAlone() async throws {
        let gate = TransferGate(.init(transfers: 32, bytesInFlight: 100), congestion: nil)
        let peak = Peak()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    // One transfer larger than the whole budget: it must not wait for ever.
                    try await gate.run(bytes: index == 7 ? 500 : 40) { () throws(SyncError) in
                        peak.enter()
                        try? await Task.sleep(for: .milliseconds(10))
                        peak.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(peak.peak == 2)
        #expect(gate.snapshot.done == 20)
    }

    @Test func anUrgentTransferGoesBeforeQueuedBackgroundOnes() async throws {
        let gate = TransferGate(.init(transfers: 1, bytesInFlight: 1 << 30), congestion: nil)
        let order = Log<String>()
        let first = try await gate.admit(bytes: 1)
        var tasks: [Task<Void, any Error>] = []
        for name in ["b1", "b2", "b3"] {
            tasks.append(Task { try await gate.run(bytes: 1) { () throws(SyncError) in order.append(name) } })
            while gate.snapshot.queued < tasks.count { try await Task.sleep(for: .milliseconds(2)) }
        }
        tasks.append(Task { try await gate.run(bytes: 1, urgent: true) { () throws(SyncError) in order.append("reader") } })
        while gate.snapshot.queued < 4 { try await Task.sleep(for: .milliseconds(2)) }
        first.finish(completed: true)
        for task in tasks { try await task.value }
        #expect(order.all == ["reader", "b1", "b2", "b3"])
    }

    @Test func aCancelledWaiterLeavesTheQueue() async throws {
        let gate = TransferGate(.init(transfers: 1, bytesInFlight: 1 << 30), congestion: nil)
        let first = try await gate.admit(bytes: 1)
        let waiting = Task { try await gate.run(bytes: 1) { () throws(SyncError) in } }
        while gate.snapshot.queued == 0 { try await Task.sleep(for: .milliseconds(2)) }
        waiting.cancel()
        await #expect(throws: SyncError.self) { try await waiting.value }
        #expect(gate.snapshot.queued == 0)
        first.finish(completed: true)
        // The slot is free again for the next one.
        try await gate.run(bytes: 1) { () throws(SyncError) in }
        #expect(gate.snapshot.running == 0 && gate.snapshot.done == 2)
    }

    @Test func throttlingHalvesTheLimitAndQuietRaisesItAgain() async throws {
        let congestion = StoreCongestion()
        let gate = TransferGate(.init(transfers: 16, bytesInFlight: 1 << 30), congestion: congestion)
        try await gate.run(bytes: 1) { () throws(SyncError) in congestion.noteThrottled() }
        #expect(gate.snapshot.limit == 8)
        #expect(gate.snapshot.throttled == 1)
        // Within a second, more throttling is the same episode: no second halving.
        try await gate.run(bytes: 1) { () throws(SyncError) in congestion.noteThrottled() }
        #expect(gate.snapshot.limit == 8)
        // As many transfers in a row without throttling as the limit raise it by one.
        for _ in 0..<8 { try await gate.run(bytes: 1) { () throws(SyncError) in } }
        #expect(gate.snapshot.limit == 9)
        for _ in 0..<200 { try await gate.run(bytes: 1) { () throws(SyncError) in } }
        #expect(gate.snapshot.limit == 16)
    }

    /// The limit is kept: 8 transfers of 64 KiB at 256 KiB/s cannot all start before 1.75 s
    /// (they start 0.25 s apart). Only the lower bound is checked, never a speed.
    @Test func aBandwidthLimitSpacesTransfersByTheirBytes() async throws {
        let gate = TransferGate(.init(transfers: 8, bytesInFlight: 1 << 30, bytesPerSecond: 256 << 10), congestion: nil)
        let start = ContinuousClock.now
        let starts = Log<Duration>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await gate.run(bytes: 64 << 10) { () throws(SyncError) in
                        starts.append(ContinuousClock.now - start)
                    }
                }
            }
            try await group.waitForAll()
        }
        let sorted = starts.all.sorted()
        for (index, at) in sorted.enumerated() {
            #expect(at >= .milliseconds(250 * index - 5), "transfer \(index) started at \(at)")
        }
    }
}
