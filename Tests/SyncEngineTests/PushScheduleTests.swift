import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// A burst of local changes is pushed when it ends (or once it has waited `maxPushDelay`),
/// not by every poll while the programs making it are still at work.
@Suite struct PushScheduleTests {
    @Test func aChangeIsDueAfterTheDebounceOrTheLongestDelay() {
        let start = ContinuousClock.now
        let (debounce, maxDelay) = (Duration.milliseconds(500), Duration.seconds(10))
        var schedule = PushSchedule()
        #expect(!schedule.isDue(at: start, debounce: debounce, maxDelay: maxDelay))
        #expect(!schedule.isBursting(at: start, debounce: debounce, maxDelay: maxDelay))

        schedule.noteChange(at: start)
        #expect(!schedule.isDue(at: start + .milliseconds(499), debounce: debounce, maxDelay: maxDelay))
        #expect(schedule.isBursting(at: start + .milliseconds(499), debounce: debounce, maxDelay: maxDelay))
        #expect(schedule.isDue(at: start + .milliseconds(500), debounce: debounce, maxDelay: maxDelay))

        // A change every 100 ms keeps it waiting, up to the longest delay after the first.
        var now = start
        while now < start + .milliseconds(9900) {
            now += .milliseconds(100)
            schedule.noteChange(at: now)
            #expect(!schedule.isDue(at: now, debounce: debounce, maxDelay: maxDelay))
        }
        #expect(!schedule.isOverdue(at: now, maxDelay: maxDelay))
        now += .milliseconds(100)
        schedule.noteChange(at: now)
        #expect(schedule.isOverdue(at: now, maxDelay: maxDelay))
        #expect(schedule.isDue(at: now, debounce: debounce, maxDelay: maxDelay))
        #expect(!schedule.isBursting(at: now, debounce: debounce, maxDelay: maxDelay))

        // A push takes everything so far; the next change starts a new wait. The count of
        // changes goes on (a push order planned before a change is stale after it).
        let changes = schedule.changes
        #expect(changes == 101)
        schedule.pushStarted()
        #expect(schedule.changes == changes)
        #expect(!schedule.isDue(at: now + .seconds(60), debounce: debounce, maxDelay: maxDelay))
        schedule.noteChange(at: now + .milliseconds(1))
        #expect(schedule.firstChange == now + .milliseconds(1))
        #expect(schedule.changes == changes + 1)
        #expect(schedule.isBursting(at: now + .milliseconds(2), debounce: debounce, maxDelay: maxDelay))
    }

    @Test func pollsDuringABurstPullButDoNotPush() async throws {
        let store = InMemoryStore()
        // No debounce or longest delay within the test: however slow a loaded machine makes
        // the writes, the burst never ends, so only the polls (every 50 ms) could push.
        let a = try await pollingDevice(store, debounce: .seconds(3600), maxPushDelay: .seconds(3600))
        let b = try await TestDevice(store: store, name: "b")
        let records = store.count(under: ContainerLayout.journalPrefix)

        // Another device commits during the burst; a's polls pull it while the burst goes on.
        var written = 0
        var seenAt: Int?
        while written < (seenAt ?? 195) + 5 {
            try await a.write("f\(written)", "burst \(written)")
            written += 1
            if written == 5 {
                try await b.write("from-b", "b")
                try await b.sync()
            }
            if seenAt == nil, a.inode("from-b") != nil { seenAt = written }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(seenAt != nil)
        // b's record, and one of a poll that started just before the first change (on a
        // loaded machine it may have found the first few changes already there).
        #expect(store.count(under: ContainerLayout.journalPrefix) <= records + 2)
        #expect(await a.engine.status().pendingItems >= written - 3)

        // The burst's changes go together when they are pushed.
        try await a.sync()
        #expect(await a.engine.status().pendingItems == 0)
        #expect(store.count(under: ContainerLayout.journalPrefix) <= records + 3)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aBurstThatGoesOnIsPushedAfterTheLongestDelay() async throws {
        let store = InMemoryStore()
        let a = try await pollingDevice(store, debounce: .seconds(3600), maxPushDelay: .milliseconds(300))
        let records = store.count(under: ContainerLayout.journalPrefix)
        // Never quiet for the debounce, so only the longest delay can push. Over as soon as
        // it does; the limit is for a machine so busy that a cycle takes a minute.
        var written = 0
        let deadline = ContinuousClock.now + .seconds(180)
        while store.count(under: ContainerLayout.journalPrefix) == records, ContinuousClock.now < deadline {
            try await a.write("f\(written)", "ongoing")
            written += 1
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(store.count(under: ContainerLayout.journalPrefix) > records)
        await a.shutdown()
    }

    /// A device that syncs on its own, polling every 50 ms.
    private func pollingDevice(_ store: InMemoryStore, debounce: Duration, maxPushDelay: Duration) async throws -> TestDevice {
        var configuration = SyncConfiguration()
        configuration.pollInterval = .milliseconds(50)
        configuration.debounce = debounce
        configuration.maxPushDelay = maxPushDelay
        return try await TestDevice(store: store, name: "burster", configuration: configuration, manualSync: false)
    }
}
