import Synchronization

/// Downloads and uploads in flight and the last error per item, readable from libfuse
/// threads without touching the sync actor (for `user.ubiqfs.state/progress/error`).
public final class TransferTable: Sendable {
    public enum Direction: String, Sendable { case download, upload }

    public struct Transfer: Sendable {
        public var direction: Direction
        public var done: Int64
        public var total: Int64

        public var percent: Int { total > 0 ? Int(min(100, done * 100 / total)) : 0 }
    }

    private struct State {
        var transfers: [Int64: Transfer] = [:]
        var errors: [Int64: String] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func transfer(_ ino: Int64) -> Transfer? { state.withLock { $0.transfers[ino] } }
    public func error(_ ino: Int64) -> String? { state.withLock { $0.errors[ino] } }

    func begin(_ ino: Int64, _ direction: Direction, total: Int64) {
        state.withLock { $0.transfers[ino] = Transfer(direction: direction, done: 0, total: total) }
    }

    func progress(_ ino: Int64, done: Int64) {
        state.withLock { $0.transfers[ino]?.done = done }
    }

    /// Ends the transfer; a failure is remembered until the item's next success.
    func end(_ ino: Int64, error: String?) {
        state.withLock {
            $0.transfers.removeValue(forKey: ino)
            if let error { $0.errors[ino] = error } else { $0.errors.removeValue(forKey: ino) }
        }
    }
}
