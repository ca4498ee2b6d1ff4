import FileCoordinator
import Foundation
import Inodes
import ItemModel
import Synchronization
import Testing

/// Runs blocking code on a dedicated thread, never on the cooperative pool (a blocked
/// pool thread could starve the very Tasks the test waits for).
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

struct NeverHappened: Error {}

/// Polls `condition` until it holds; records a failure after `limit` (a hang guard: a
/// cooperative pool kept busy by other suites may hold a step back for many seconds).
func eventually(
    _ what: String, within limit: Duration = .seconds(120),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for: \(what)", sourceLocation: sourceLocation)
            throw NeverHappened()
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// An ordered log shared between threads and Tasks.
final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}

extension FileCoordinator {
    func holders(_ key: Inode) -> [String] { snapshot().holders(key) }

    func waiters(_ key: Inode) -> [String] { snapshot().waiters(key) }

    /// The first snapshot in which `condition` holds, or nil after `limit`. Polled on a
    /// thread of its own, so a cooperative pool kept busy by other suites cannot make it
    /// miss a state that lasts only a few seconds.
    func firstSnapshot(
        within limit: Duration = .seconds(30), where condition: @escaping @Sendable ([LeaseTableEntry]) -> Bool
    ) async -> [LeaseTableEntry]? {
        await onThread {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                let snapshot = self.snapshot()
                if condition(snapshot) { return snapshot }
                usleep(200)
            }
            return nil
        }
    }

    /// A timed acquisition that is expected to time out; releases (and records a
    /// failure) if it unexpectedly succeeds.
    func expectTimeout(
        _ requests: [LeaseRequest], owner: String, timeout: Duration = .milliseconds(20),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> LeaseTimeout? {
        do throws(LeaseTimeout) {
            let leases = try acquire(requests, owner: owner, timeout: timeout)
            leases.release()
            Issue.record("\(owner) acquired \(requests) but should have timed out", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }
}

/// Awaits a Task's value for at most `limit`, so a lost wake-up fails the test with a
/// message instead of hanging the whole run.
func value<T: Sendable, Failure: Error>(
    of task: Task<T, Failure>, within limit: Duration = .seconds(120),
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> T {
    let once = Once<Result<T, any Error>?>()
    let outcome = await withCheckedContinuation { continuation in
        once.continuation.withLock { $0 = continuation }
        let timer = Task {
            try? await Task.sleep(for: limit)
            once.finish(nil)
        }
        Task {
            let result = await task.result
            timer.cancel()
            once.finish(result.mapError { $0 })
        }
    }
    guard let outcome else {
        Issue.record("task did not finish within \(limit)", sourceLocation: sourceLocation)
        throw NeverHappened()
    }
    return try outcome.get()
}

/// A continuation that the first of several racers resumes.
final class Once<Value: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<Value, Never>?>(nil)
    func finish(_ value: Value) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}

extension FileCoordinator {
    /// The async acquisition, bounded: a bug that loses a wake-up fails the test
    /// instead of hanging the run.
    func acquire(
        _ requests: [LeaseRequest], owner: String, within limit: Duration,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> LeaseSet {
        let task = Task { try await acquire(requests, owner: owner) }
        do {
            return try await value(of: task, within: limit, sourceLocation: sourceLocation)
        } catch {
            task.cancel()
            throw error
        }
    }
}

extension [LeaseTableEntry] {
    func holders(_ key: Inode) -> [String] { first { $0.key == key }?.holders.map(\.owner) ?? [] }

    func waiters(_ key: Inode) -> [String] { first { $0.key == key }?.waiters.map(\.owner) ?? [] }
}
