import GRDB
import Synchronization

/// Makes committed transactions durable, many callers with one disk sync (group commit).
///
/// Ordinary writes commit with synchronous=NORMAL: their WAL frames reach the page cache,
/// not the disk. A barrier commits one more transaction with synchronous=FULL, which
/// fsyncs the WAL and with it every frame before it. That transaction always changes a
/// byte (a counter in `setting`): SQLite writes no frame, and so syncs nothing, for a
/// transaction that changes nothing.
///
/// Barriers are numbered as they start, under the database's writer. A caller needs one
/// that started after it arrived (`started + 1` at arrival); while it waits for the writer,
/// another caller's barrier may be that one, and then it returns without a sync of its own.
final class DurabilityBarrier: Sendable {
    private struct Count {
        var started: UInt64 = 0
        var finished: UInt64 = 0
    }

    static let counterKey = "durableCommits"
    private let count = Mutex(Count())

    /// The number a barrier must have to cover what the caller committed so far.
    func needed() -> UInt64 {
        count.withLock { $0.started } + 1
    }

    /// The number of the last barrier that finished: everything it covered is on disk.
    func finishedThrough() -> UInt64 {
        count.withLock { $0.finished }
    }

    /// Inside the writer, outside any transaction: the counter's bump committed with
    /// synchronous=FULL, unless a barrier numbered `needed` or later finished.
    func commitUnlessCovered(_ needed: UInt64, _ db: Database) throws {
        guard count.withLock({ $0.finished < needed }) else { return }
        let number = count.withLock { count in
            count.started += 1
            return count.started
        }
        try db.execute(sql: "PRAGMA synchronous = FULL")
        defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
        try db.inTransaction {
            try db.execute(
                sql: "INSERT INTO setting(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                arguments: [Self.counterKey]
            )
            return .commit
        }
        count.withLock { $0.finished = max($0.finished, number) }
    }
}
