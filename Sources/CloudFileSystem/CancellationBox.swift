import Synchronization

/// Lets a kernel interrupt cancel a Task that may not exist yet: the interrupt handler is
/// registered before the Task is created (so a reply can never precede the registration).
final class CancellationBox: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    func attach(_ task: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }
}
