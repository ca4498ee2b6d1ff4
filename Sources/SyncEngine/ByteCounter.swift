import Synchronization

/// A count of bytes added from any task.
final class ByteCounter: Sendable {
    private let value = Mutex<Int64>(0)

    func add(_ bytes: Int) {
        value.withLock { $0 += Int64(bytes) }
    }

    var total: Int64 { value.withLock { $0 } }
}
