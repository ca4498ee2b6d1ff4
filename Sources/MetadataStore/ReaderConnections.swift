import Foundation
import GRDB
import Synchronization

/// Read-only connections for the synchronous reads of libfuse threads. GRDB's pool spends
/// about 10 µs per access, and 45 µs for a read transaction, before the first statement
/// runs (reader checkout, schema check, savepoint); a connection from this stack costs one
/// lock. At most `idleLimit` connections wait here; more are opened while more threads
/// read at once, and closed when given back.
final class ReaderConnections: Sendable {
    private let path: String
    private let idle = Mutex<[DatabaseQueue]>([])
    private let idleLimit: Int

    init(path: String, idleLimit: Int = 8) {
        self.path = path
        self.idleLimit = idleLimit
    }

    /// Runs `body` on a connection outside any transaction: each statement sees a
    /// consistent state of its own.
    func unisolated<T>(_ body: (Database) throws -> T) throws -> T {
        let queue = try idle.withLock { $0.popLast() } ?? open()
        defer {
            idle.withLock { connections in
                if connections.count < idleLimit { connections.append(queue) }
            }
        }
        return try queue.inDatabase(body)
    }

    /// Runs `body` in a read transaction: every statement sees the same snapshot.
    func isolated<T>(_ body: (Database) throws -> T) throws -> T {
        try unisolated { db in
            var result: T?
            try db.inTransaction(.deferred) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    private func open() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(30)
        configuration.label = "reader"
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}
