import FileCoordinator
import Foundation
import Inodes
import ItemModel
import Synchronization
import Testing

/// Many threads (blocking acquire, some with timeouts) and many Tasks (async acquire,
/// some cancelled) take random multi-key sets with duplicates; inside every critical
/// section the checker verifies that an exclusive holder is alone. A watchdog turns a
/// deadlock into a failure. Seeded, so the request sequence is reproducible.
@Suite struct LeaseStressTests {
    static let seed: UInt64 = 0x5EED_0F_C0DE
    static let keyCount = 6
    static let threads = 6
    static let tasks = 6
    static let iterations = 1000

    /// Per-key counts of who is inside, updated on entering and leaving a critical section.
    final class Checker: Sendable {
        private struct Inside { var shared = 0; var exclusive = 0 }
        private let inside = Mutex([Inside](repeating: Inside(), count: LeaseStressTests.keyCount))
        private let problems = Mutex<[String]>([])

        func enter(_ held: [LeaseRequest], asked: [LeaseRequest], by who: String) {
            let expected = Self.merge(asked)
            if held != expected { report("\(who) holds \(held) for \(asked), expected \(expected)") }
            inside.withLock { inside in
                for request in held {
                    let key = Int(request.key.rawValue)
                    switch request.access {
                    case .shared:
                        if inside[key].exclusive != 0 { report("\(who): shared \(key) while exclusive inside") }
                        inside[key].shared += 1
                    case .exclusive:
                        if inside[key].exclusive != 0 || inside[key].shared != 0 {
                            report("\(who): exclusive \(key) while \(inside[key]) inside")
                        }
                        inside[key].exclusive += 1
                    }
                }
            }
        }

        func leave(_ held: [LeaseRequest]) {
            inside.withLock { inside in
                for request in held {
                    switch request.access {
                    case .shared: inside[Int(request.key.rawValue)].shared -= 1
                    case .exclusive: inside[Int(request.key.rawValue)].exclusive -= 1
                    }
                }
            }
        }

        var reports: [String] { problems.withLock { $0 } }

        private func report(_ problem: String) { problems.withLock { $0.append(problem) } }

        /// The reference model of dedup: one request per key, exclusive wins, ascending.
        private static func merge(_ requests: [LeaseRequest]) -> [LeaseRequest] {
            var byKey: [Inode: LeaseAccess] = [:]
            for request in requests where byKey[request.key] != .exclusive { byKey[request.key] = request.access }
            return byKey.keys.sorted().map { LeaseRequest($0, byKey[$0]!) }
        }
    }

    final class Counts: Sendable {
        let finished = Atomic<Int>(0)
        let timeouts = Atomic<Int>(0)
        let cancellations = Atomic<Int>(0)
        /// Critical sections entered so far, by everybody: the watchdog's sign of progress.
        let entered = Atomic<Int>(0)
    }

    static func randomRequests(_ rng: inout SplitMix64) -> [LeaseRequest] {
        (0..<Int.random(in: 1...4, using: &rng)).map { _ in
            LeaseRequest(Inode(UInt64.random(in: 0..<UInt64(keyCount), using: &rng)),
                         Double.random(in: 0..<1, using: &rng) < 0.6 ? .shared : .exclusive)
        }
    }

    @Test func randomizedThreadsAndTasksNeverDeadlockOrOverlap() async throws {
        let coordinator = FileCoordinator()
        let checker = Checker()
        let counts = Counts()

        for worker in 0..<Self.threads {
            Thread {
                var rng = SplitMix64(seed: Self.seed &+ UInt64(worker))
                let who = "thread \(worker)"
                for _ in 0..<Self.iterations {
                    let asked = Self.randomRequests(&rng)
                    let timed = Int.random(in: 0..<8, using: &rng) == 0
                    let pause = UInt32.random(in: 0...40, using: &rng)
                    do throws(LeaseTimeout) {
                        let leases = try coordinator.acquire(asked, owner: who, timeout: timed ? .microseconds(200) : nil)
                        checker.enter(leases.requests, asked: asked, by: who)
                        counts.entered.add(1, ordering: .relaxed)
                        if pause > 0 { usleep(pause) }
                        checker.leave(leases.requests)
                        leases.release()
                    } catch {
                        counts.timeouts.add(1, ordering: .relaxed)
                    }
                }
                counts.finished.add(1, ordering: .releasing)
            }.start()
        }

        var handles: [Task<Void, Never>] = []
        for worker in 0..<Self.tasks {
            handles.append(Task.detached {
                var rng = SplitMix64(seed: Self.seed &+ 1000 &+ UInt64(worker))
                let who = "task \(worker)"
                for _ in 0..<Self.iterations {
                    let asked = Self.randomRequests(&rng)
                    let cancelled = Int.random(in: 0..<8, using: &rng) == 0
                    let yields = Int.random(in: 0...2, using: &rng)
                    let attempt = Task {
                        let leases = try await coordinator.acquire(asked, owner: who)
                        checker.enter(leases.requests, asked: asked, by: who)
                        counts.entered.add(1, ordering: .relaxed)
                        for _ in 0..<yields { await Task.yield() }
                        checker.leave(leases.requests)
                        leases.release()
                    }
                    if cancelled {
                        await Task.yield()
                        attempt.cancel()
                    }
                    if case .failure = await attempt.result { counts.cancellations.add(1, ordering: .relaxed) }
                }
                counts.finished.add(1, ordering: .releasing)
            })
        }

        // Watchdog: a deadlock (or a lost wake-up) shows up as nobody entering a critical
        // section any more. A slow run only stalls while a busy two-core machine keeps every
        // thread of this process from running, never for this long; a deadlock never resolves.
        let workers = Self.threads + Self.tasks
        let stall = Duration.seconds(120)
        var (progress, lastProgress) = (-1, ContinuousClock.now)
        while counts.finished.load(ordering: .acquiring) < workers {
            // Looked at before the clock: the watchdog may itself have waited long to run.
            let now = counts.entered.load(ordering: .relaxed)
            if now != progress {
                (progress, lastProgress) = (now, .now)
            } else if ContinuousClock.now - lastProgress >= stall {
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let done = counts.finished.load(ordering: .acquiring)
        if done < workers {
            for handle in handles { handle.cancel() }
            let table = coordinator.snapshot().map { entry in
                "\(entry.key): holders \(entry.holders.map { "\($0.owner)/\($0.access)" }) waiters \(entry.waiters.map { "\($0.owner)/\($0.access)" })"
            }
            Issue.record("deadlock suspected (seed \(Self.seed)): nobody entered for \(stall); \(done)/\(workers) workers finished; table:\n\(table.joined(separator: "\n"))")
            return
        }
        #expect(checker.reports.isEmpty, "seed \(Self.seed): \(checker.reports.prefix(5))")
        #expect(coordinator.snapshot().isEmpty, "leases left behind (seed \(Self.seed))")
        // The run must actually have contended: some timed waits gave up.
        #expect(counts.timeouts.load(ordering: .relaxed) + counts.cancellations.load(ordering: .relaxed) > 0)
    }
}
