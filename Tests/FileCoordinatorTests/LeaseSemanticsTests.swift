import FileCoordinator
import Foundation
import Testing

@Suite struct LeaseSemanticsTests {
    @Test func sharedLeasesCoexist() throws {
        let coordinator = FileCoordinator()
        let first = try coordinator.acquire([LeaseRequest(1, .shared)], owner: "reader 1", timeout: .zero)
        let second = try coordinator.acquire([LeaseRequest(1, .shared)], owner: "reader 2", timeout: .zero)
        #expect(coordinator.holders(1) == ["reader 1", "reader 2"])
        first.release()
        #expect(coordinator.holders(1) == ["reader 2"])
        second.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func exclusiveExcludesEverybody() throws {
        let coordinator = FileCoordinator()
        let writer = try coordinator.acquire([LeaseRequest(7, .exclusive)], owner: "writer", timeout: .zero)
        let timeout = coordinator.expectTimeout([LeaseRequest(7, .shared)], owner: "reader")
        #expect(timeout?.key == 7)
        #expect(timeout?.owner == "reader")
        #expect(timeout?.blockers.map(\.owner) == ["writer"])
        #expect((timeout?.waitedSeconds ?? 0) >= 0.015)
        _ = coordinator.expectTimeout([LeaseRequest(7, .exclusive)], owner: "writer 2")
        writer.release()

        let reader = try coordinator.acquire([LeaseRequest(7, .shared)], owner: "reader", timeout: .zero)
        _ = coordinator.expectTimeout([LeaseRequest(7, .exclusive)], owner: "writer 3")
        reader.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func keysAreDeduplicatedWithExclusiveWinning() throws {
        let coordinator = FileCoordinator()
        let leases = try coordinator.acquire(
            [LeaseRequest(3, .shared), LeaseRequest(1, .shared), LeaseRequest(3, .exclusive),
             LeaseRequest(1, .shared), LeaseRequest(2, .exclusive), LeaseRequest(3, .shared)],
            owner: "dup", timeout: .zero)
        #expect(leases.requests == [LeaseRequest(1, .shared), LeaseRequest(2, .exclusive), LeaseRequest(3, .exclusive)])
        let table = coordinator.snapshot()
        #expect(table.map(\.key) == [1, 2, 3])
        #expect(table.map { $0.holders.map(\.access) } == [["shared"], ["exclusive"], ["exclusive"]])
        _ = coordinator.expectTimeout([LeaseRequest(3, .shared)], owner: "reader of 3")
        let reader = try coordinator.acquire([LeaseRequest(1, .shared)], owner: "reader of 1", timeout: .zero)
        reader.release()
        leases.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func releaseIsIdempotentAndEmptyAcquisitionsWork() throws {
        let coordinator = FileCoordinator()
        let leases = try coordinator.acquire([LeaseRequest(1, .exclusive)], owner: "a", timeout: .zero)
        #expect(!leases.isReleased)
        leases.release()
        leases.release()
        #expect(leases.isReleased)
        let again = try coordinator.acquire([LeaseRequest(1, .exclusive)], owner: "b", timeout: .zero)
        leases.release()  // must not release b's lease
        #expect(coordinator.holders(1) == ["b"])
        again.release()
        let none = try coordinator.acquire([], owner: "nothing", timeout: .zero)
        none.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func sharedRequestQueuesBehindWaitingWriter() async throws {
        let coordinator = FileCoordinator()
        let log = EventLog()
        let reader = try await coordinator.acquire([LeaseRequest(1, .shared)], owner: "r1", within: .seconds(5))
        let writer = Task {
            let leases = try await coordinator.acquire([LeaseRequest(1, .exclusive)], owner: "w")
            log.append("w")
            return leases
        }
        try await eventually("w queued") { coordinator.waiters(1) == ["w"] }
        // Only readers hold key 1, yet r2 must queue behind the waiting writer.
        let lateReader = Task {
            await onThread {
                let leases = try! coordinator.acquire([LeaseRequest(1, .shared)], owner: "r2")
                log.append("r2")
                return leases
            }
        }
        do {
            try await eventually("r2 queued") { coordinator.waiters(1) == ["w", "r2"] }
            #expect(log.all.isEmpty)

            reader.release()
            let writerLeases = try await value(of: writer)
            #expect(coordinator.holders(1) == ["w"])
            #expect(coordinator.waiters(1) == ["r2"])
            #expect(log.all == ["w"])
            writerLeases.release()
            try await value(of: lateReader).release()
        } catch {
            // Leases still granted after the test gave up are released, so that the failure
            // is reported instead of a dropped lease stopping the whole run.
            reader.release()
            (try? await writer.value)?.release()
            await lateReader.value.release()
            throw error
        }
        #expect(log.all == ["w", "r2"])
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func consecutiveSharedWaitersAreGrantedTogether() async throws {
        let coordinator = FileCoordinator()
        let holder = try await coordinator.acquire([LeaseRequest(9, .exclusive)], owner: "x", within: .seconds(5))
        var waiting: [Task<LeaseSet, any Error>] = []
        for (name, access) in [("s1", LeaseAccess.shared), ("s2", .shared), ("e3", .exclusive), ("s4", .shared)] {
            if name == "s2" {  // one blocking waiter among the async ones
                waiting.append(Task { await onThread { try! coordinator.acquire([LeaseRequest(9, access)], owner: name) } })
            } else {
                waiting.append(Task { try await coordinator.acquire([LeaseRequest(9, access)], owner: name) })
            }
            try await eventually("\(name) queued") { coordinator.waiters(9).last == name }
        }
        #expect(coordinator.waiters(9) == ["s1", "s2", "e3", "s4"])

        holder.release()
        let s1 = try await value(of: waiting[0])
        let s2 = try await value(of: waiting[1])
        #expect(coordinator.holders(9) == ["s1", "s2"])
        #expect(coordinator.waiters(9) == ["e3", "s4"])
        s1.release()
        #expect(coordinator.holders(9) == ["s2"])
        s2.release()
        let e3 = try await value(of: waiting[2])
        #expect(coordinator.holders(9) == ["e3"])
        #expect(coordinator.waiters(9) == ["s4"])
        e3.release()
        try await value(of: waiting[3]).release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func timeoutReleasesPartialAcquisition() async throws {
        let coordinator = FileCoordinator()
        let blocker = try await coordinator.acquire([LeaseRequest(2, .exclusive)], owner: "blocker", within: .seconds(5))
        // Released on every path: a failed expectation must not become a crash of the whole run.
        defer { blocker.release() }
        let attempt = Task {
            await onThread { () -> Result<LeaseSet, LeaseTimeout> in
                do throws(LeaseTimeout) {
                    return .success(try coordinator.acquire(
                        [LeaseRequest(3, .exclusive), LeaseRequest(1, .exclusive), LeaseRequest(2, .shared)],
                        owner: "multi", timeout: .seconds(8)))
                } catch {
                    return .failure(error)
                }
            }
        }
        // It holds key 1 while it waits for key 2, and has not touched key 3.
        // Watched from a thread: the state lasts the 8 s timeout, which a starved pool could miss.
        let seen = await coordinator.firstSnapshot { $0.waiters(2) == ["multi"] }
        #expect(seen != nil, "multi never waited on 2")
        #expect(seen?.holders(1) == ["multi"])
        #expect(seen?.holders(3) == [])

        switch try await value(of: attempt) {
        case .success(let leases):
            leases.release()
            Issue.record("acquired despite the blocker")
        case .failure(let timeout):
            #expect(timeout.key == 2)
            #expect(timeout.owner == "multi")
            #expect(timeout.blockers.map(\.owner) == ["blocker"])
            #expect(timeout.waitedSeconds >= 7.9)
        }
        #expect(coordinator.snapshot().map(\.key) == [2])
        #expect(coordinator.holders(2) == ["blocker"])
        #expect(coordinator.waiters(2).isEmpty)
        blocker.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func timedOutWriterAtHeadLetsReadersBehindThrough() async throws {
        let coordinator = FileCoordinator()
        let reader = try await coordinator.acquire([LeaseRequest(4, .shared)], owner: "r1", within: .seconds(5))
        defer { reader.release() }
        // Long enough for r2 to queue behind w even on a loaded machine (8 s once was not).
        let writer = Task {
            await onThread { coordinator.expectTimeout([LeaseRequest(4, .exclusive)], owner: "w", timeout: .seconds(20)) }
        }
        try await eventually("w queued") { coordinator.waiters(4) == ["w"] }
        let lateReader = Task { try await coordinator.acquire([LeaseRequest(4, .shared)], owner: "r2") }
        do {
            try await eventually("r2 queued") { coordinator.waiters(4) == ["w", "r2"] }
        } catch {
            // Never a dropped lease set (a crash of the whole run) on a failed expectation.
            lateReader.cancel()
            (try? await lateReader.value)?.release()
            throw error
        }
        #expect(try await value(of: writer) != nil)
        // r2 is granted when w gives up, although r1 still holds.
        let r2 = try await value(of: lateReader)
        #expect(coordinator.holders(4) == ["r1", "r2"])
        r2.release()
        reader.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func cancellationWithdrawsWaiterAndReleasesPartialAcquisition() async throws {
        let coordinator = FileCoordinator()
        let holder = try await coordinator.acquire([LeaseRequest(5, .exclusive)], owner: "holder", within: .seconds(5))
        let task = Task { try await coordinator.acquire([LeaseRequest(5, .shared), LeaseRequest(4, .exclusive)], owner: "sync") }
        try await eventually("sync waits on 5") { coordinator.waiters(5) == ["sync"] }
        #expect(coordinator.holders(4) == ["sync"])

        task.cancel()
        await #expect(throws: CancellationError.self) { try await value(of: task).release() }
        #expect(coordinator.snapshot().map(\.key) == [5])
        #expect(coordinator.holders(5) == ["holder"])
        #expect(coordinator.waiters(5).isEmpty)
        let free = try await coordinator.acquire([LeaseRequest(4, .exclusive)], owner: "next", within: .seconds(5))
        free.release()
        holder.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func cancelledWriterAtHeadLetsReadersBehindThrough() async throws {
        let coordinator = FileCoordinator()
        let reader = try await coordinator.acquire([LeaseRequest(6, .shared)], owner: "r1", within: .seconds(5))
        let writer = Task { try await coordinator.acquire([LeaseRequest(6, .exclusive)], owner: "w") }
        try await eventually("w queued") { coordinator.waiters(6) == ["w"] }
        let lateReader = Task { try await coordinator.acquire([LeaseRequest(6, .shared)], owner: "r2") }
        try await eventually("r2 queued") { coordinator.waiters(6) == ["w", "r2"] }
        writer.cancel()
        await #expect(throws: CancellationError.self) { try await value(of: writer).release() }
        let r2 = try await value(of: lateReader)
        #expect(coordinator.holders(6) == ["r1", "r2"])
        r2.release()
        reader.release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func alreadyCancelledTaskDoesNotQueue() async throws {
        let coordinator = FileCoordinator()
        let holder = try await coordinator.acquire([LeaseRequest(8, .exclusive)], owner: "holder", within: .seconds(5))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            // Free keys are still granted in a cancelled Task; only waiting is cancellable.
            let free = try await coordinator.acquire([LeaseRequest(1, .shared)], owner: "free")
            free.release()
            return try await coordinator.acquire([LeaseRequest(7, .shared), LeaseRequest(8, .shared)], owner: "late")
        }
        await #expect(throws: CancellationError.self) { try await value(of: task).release() }
        #expect(coordinator.snapshot().map(\.key) == [8])
        #expect(coordinator.waiters(8).isEmpty)
        holder.release()
    }

    @Test func snapshotShowsHoldersAndWaitersWithOwners() async throws {
        let coordinator = FileCoordinator()
        let before = Date().timeIntervalSince1970
        let readers = try await coordinator.acquire([LeaseRequest(20, .shared), LeaseRequest(10, .shared)], owner: "fuse read", within: .seconds(5))
        let other = try await coordinator.acquire([LeaseRequest(10, .shared)], owner: "fuse read 2", within: .seconds(5))
        let writer = Task { try await coordinator.acquire([LeaseRequest(10, .exclusive)], owner: "sync apply") }
        try await eventually("writer queued") { !coordinator.waiters(10).isEmpty }
        let blocked = Task {
            await onThread { try! coordinator.acquire([LeaseRequest(10, .shared)], owner: "fuse read 3") }
        }
        try await eventually("reader queued") { coordinator.waiters(10).count == 2 }

        let table = coordinator.snapshot()
        #expect(table.map(\.key) == [10, 20])
        #expect(table[0].holders.map(\.owner) == ["fuse read", "fuse read 2"])
        #expect(table[0].holders.map(\.access) == ["shared", "shared"])
        #expect(table[0].waiters.map(\.owner) == ["sync apply", "fuse read 3"])
        #expect(table[0].waiters.map(\.access) == ["exclusive", "shared"])
        #expect(table[1].holders.map(\.owner) == ["fuse read"])
        #expect(table[1].waiters.isEmpty)
        let after = Date().timeIntervalSince1970
        for info in table.flatMap({ $0.holders + $0.waiters }) {
            #expect(info.since >= before - 1 && info.since <= after + 1)
        }
        let decoded = try JSONDecoder().decode([LeaseTableEntry].self, from: JSONEncoder().encode(table))
        #expect(decoded == table)

        readers.release()
        other.release()
        try await value(of: writer).release()
        try await value(of: blocked).release()
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func withLeasesReleasesWhateverTheBodyDoes() async throws {
        struct Boom: Error {}
        let coordinator = FileCoordinator()
        let blockingResult = await onThread { () -> Bool in
            let value = coordinator.withLeases([LeaseRequest(1, .exclusive)], owner: "blocking") {
                coordinator.holders(1) == ["blocking"]
            }
            let threw: Bool
            do {
                try coordinator.withLeases([LeaseRequest(1, .exclusive)], owner: "blocking") { () throws(Boom) in throw Boom() }
                threw = false
            } catch {
                threw = true
            }
            return value && threw && coordinator.snapshot().isEmpty
        }
        #expect(blockingResult)

        let value = try await coordinator.withLeases([LeaseRequest(2, .shared)], owner: "async") {
            await Task.yield()
            return coordinator.holders(2)
        }
        #expect(value == ["async"])
        await #expect(throws: Boom.self) {
            try await coordinator.withLeases([LeaseRequest(2, .exclusive)], owner: "async") { throw Boom() }
        }
        #expect(coordinator.snapshot().isEmpty)
    }

    @Test func asyncWithLeasesRunsOnTheCallersActor() async throws {
        actor Engine {
            let coordinator = FileCoordinator()
            var applied = 0
            func apply() async throws -> Int {
                try await coordinator.withLeases([LeaseRequest(1, .exclusive)], owner: "engine") {
                    applied += 1  // actor state, touched without hopping
                    return applied
                }
            }
        }
        let engine = Engine()
        #expect(try await engine.apply() == 1)
        #expect(try await engine.apply() == 2)
    }
}
