import Dispatch

/// How a queued acquisition is woken. A libfuse thread parks on its own semaphore (it
/// may block); a Task suspends on a continuation (it must never block). Both are only
/// ever triggered after the table's Mutex has been released.
enum LeaseWakeup: Sendable {
    case thread(DispatchSemaphore)
    case task(CheckedContinuation<Bool, Never>)

    /// The lease was granted: the waiter now holds it and goes on with its next key.
    func granted() {
        switch self {
        case .thread(let semaphore): semaphore.signal()
        case .task(let continuation): continuation.resume(returning: true)
        }
    }

    /// The waiter was withdrawn by its own cancellation (threads withdraw themselves on
    /// timeout and are not woken).
    func cancelled() {
        switch self {
        case .thread: break
        case .task(let continuation): continuation.resume(returning: false)
        }
    }
}
