import Dispatch
import Synchronization

/// Runs async work from a plain thread (the main thread before libfuse's loop, or the
/// control server's thread) and waits for it. Never called from a Task.
enum Blocking {
    static func wait<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value: Result<T, any Error>
            do { value = .success(try await work()) } catch { value = .failure(error) }
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
