import Foundation

/// Runs blocking work (waiting for a process, polling a port) on its own thread and
/// suspends the caller: tests that block Swift's cooperative pool (two threads on a
/// two-core machine) starve every other test running beside them.
public func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
