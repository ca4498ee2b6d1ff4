import Inodes
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
        var transfers: [Inode: Transfer] = [:]
        var errors: [Inode: String] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func transfer(_ ino: Inode) -> Transfer? { state.withLock { $0.transfers[ino] } }
    public func error(_ ino: Inode) -> String? { state.withLock { $0.errors[ino] } }
    /// Every transfer in flight (`ubiqfs status --watch`).
    public func all() -> [(ino: Inode, transfer: Transfer)] { state.withLock { $0.transfers.map { ($0.key, $0.value) } } }

    func begin(_ ino: Inode, _ direction: Direction, total: Int64) {
        state.withLock { $0.transfers[ino] = Transfer(direction: direction, done: 0, total: total) }
    }

    func progress(_ ino: Inode, done: Int64) {
        state.withLock { $0.transfers[ino]?.done = done }
    }

    /// `bytes` more are done (blocks finish out of order).
    func advance(_ ino: Inode, by bytes: Int64) {
        state.withLock { $0.transfers[ino]?.done += bytes }
    }

    /// A block fetch for a reader failed: remembered as the item's last error.
    func noteError(_ ino: Inode, _ error: String) {
        state.withLock { $0.errors[ino] = error }
    }

    func clearError(_ ino: Inode) {
        _ = state.withLock { $0.errors.removeValue(forKey: ino) }
    }

    /// Ends the transfer; a failure is remembered until the item's next success.
    func end(_ ino: Inode, error: String?) {
        state.withLock {
            $0.transfers.removeValue(forKey: ino)
            if let error { $0.errors[ino] = error } else { $0.errors.removeValue(forKey: ino) }
        }
    }
}
