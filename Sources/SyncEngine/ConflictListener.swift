import Synchronization

/// Who hears of each conflict as the engine records it (the desktop notifier), without
/// subscribing to every change event (which would make every emitter compute paths).
/// Called on the engine with no lock of ours held: it must not block.
public final class ConflictListener: Sendable {
    private let handler = Mutex<(@Sendable (String) -> Void)?>(nil)

    public init() {}

    /// Replaces the handler; nil stops reporting.
    public func set(_ receive: (@Sendable (String) -> Void)?) {
        handler.withLock { $0 = receive }
    }

    func report(_ message: String) {
        handler.withLock { $0 }?(message)
    }
}
