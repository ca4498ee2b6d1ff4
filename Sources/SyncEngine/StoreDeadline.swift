import ContainerStore
import Synchronization

/// Bounds a store call: a store that hangs (a dead TCP peer, a stalled disk) fails as
/// unreachable after `limit` instead of holding a reader or the sync loop forever. The
/// call is not awaited past the limit (a call stuck in a syscall cannot be cancelled); it
/// is cancelled and left to finish on its own.
public enum StoreDeadline {
    public static func run<T: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            let once = Once(continuation)
            let work = Task {
                do throws(StoreError) {
                    once.resume(.success(try await body()))
                } catch {
                    once.resume(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: limit)
                if once.resume(.failure(StoreError(code: .unreachable, message: "the store did not answer within \(limit)"))) {
                    work.cancel()
                }
            }
        }
        return try result.get()
    }

    /// Resumes the continuation with whichever result comes first.
    private final class Once<T: Sendable>: Sendable {
        private let continuation: Mutex<CheckedContinuation<Result<T, StoreError>, Never>?>

        init(_ continuation: CheckedContinuation<Result<T, StoreError>, Never>) {
            self.continuation = Mutex(continuation)
        }

        @discardableResult
        func resume(_ result: Result<T, StoreError>) -> Bool {
            guard let continuation = continuation.withLock({ value in defer { value = nil }; return value }) else { return false }
            continuation.resume(returning: result)
            return true
        }
    }
}
