import ContainerStore
import Synchronization

/// Bounds a store call: a store that hangs (a dead TCP peer, a stalled disk) fails as
/// unreachable after `limit` instead of holding a reader or the sync loop forever, and a
/// caller that is cancelled (an unmount) stops waiting at once. The call is not awaited
/// past either (a call stuck in a syscall cannot be cancelled); it is cancelled and left
/// to finish on its own.
public enum StoreDeadline {
    public static func run<T: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let once = Once<T>()
        let result: Result<T, StoreError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard once.start(continuation) else { return }
                let work = Task {
                    do throws(StoreError) {
                        once.resume(.success(try await body()))
                    } catch {
                        once.resume(.failure(error))
                    }
                }
                let timer = Task {
                    try? await Task.sleep(for: limit)
                    if !Task.isCancelled {
                        once.resume(.failure(StoreError(code: .unreachable, message: "the store did not answer within \(limit)")))
                    }
                }
                once.attach(work, timer)
            }
        } onCancel: {
            once.resume(.failure(StoreError(code: .cancelled, message: "the store call was cancelled")))
        }
        return try result.get()
    }

    /// Resumes the continuation with whichever result comes first, and then cancels the
    /// call if it is still running, and the timer.
    private final class Once<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<Result<T, StoreError>, Never>?
            var tasks: [Task<Void, Never>] = []
            /// A result that came before the continuation (a cancellation before the start).
            var early: Result<T, StoreError>?
            var done = false
        }

        private let state = Mutex(State())

        /// Takes the continuation; false (and the continuation resumed) if a result came first.
        func start(_ continuation: CheckedContinuation<Result<T, StoreError>, Never>) -> Bool {
            let early = state.withLock { state -> Result<T, StoreError>? in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            guard let early else { return true }
            continuation.resume(returning: early)
            return false
        }

        func attach(_ work: Task<Void, Never>, _ timer: Task<Void, Never>) {
            let finished = state.withLock { state in
                state.tasks = [work, timer]
                return state.done
            }
            if finished {
                work.cancel()
                timer.cancel()
            }
        }

        func resume(_ result: Result<T, StoreError>) {
            let (continuation, tasks) = state.withLock { state -> (CheckedContinuation<Result<T, StoreError>, Never>?, [Task<Void, Never>]) in
                guard !state.done else { return (nil, []) }
                state.done = true
                guard let continuation = state.continuation else {
                    state.early = result
                    return (nil, [])
                }
                state.continuation = nil
                return (continuation, state.tasks)
            }
            continuation?.resume(returning: result)
            for task in tasks { task.cancel() }
        }
    }
}
