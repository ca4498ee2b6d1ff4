import Synchronization

/// Who hears of each conflict and each merge as the engine records it (the desktop
/// notifier), without subscribing to every change event (which would make every emitter
/// compute paths). Called on the engine with no lock of ours held: it must not block.
public final class ConflictListener: Sendable {
    public enum Kind: Sendable {
        /// A conflict copy was made.
        case conflict
        /// Another device's version and the edit made here were merged.
        case merged
    }

    private let handler = Mutex<(@Sendable (Kind, String) -> Void)?>(nil)

    public init() {}

    /// Replaces the handler; nil stops reporting.
    public func set(_ receive: (@Sendable (Kind, String) -> Void)?) {
        handler.withLock { $0 = receive }
    }

    func report(_ kind: Kind, _ message: String) {
        handler.withLock { $0 }?(kind, message)
    }
}
