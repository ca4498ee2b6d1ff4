import DatabaseMerge
import Foundation
import GRDB

/// A folder for one merge: base, ours and theirs made with SQL, the merged output beside
/// them. `remove()` takes the folder away (call it in a defer).
struct DatabaseFixture {
    let directory: String

    var base: String { directory + "/base.db" }
    var ours: String { directory + "/ours.db" }
    var theirs: String { directory + "/theirs.db" }
    var output: String { directory + "/merged.db" }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-dbmerge-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Base from `schema`; ours and theirs start as copies of it and run their own SQL. With
    /// `wal`, all three are in WAL mode (each closed, so its WAL is checkpointed and gone).
    func make(_ schema: String, ours oursSQL: String = "", theirs theirsSQL: String = "", wal: Bool = false) throws {
        try execute((wal ? "PRAGMA journal_mode = WAL;" : "") + schema, in: base)
        try branch()
        try execute(oursSQL, in: ours)
        try execute(theirsSQL, in: theirs)
    }

    /// Ours and theirs made as copies of base.
    func branch() throws {
        try FileManager.default.copyItem(atPath: base, toPath: ours)
        try FileManager.default.copyItem(atPath: base, toPath: theirs)
    }

    /// Runs SQL on a database, foreign keys off as SQLite has them by default (GRDB turns them on).
    func execute(_ sql: String, in path: String) throws {
        let queue = try DatabaseQueue(path: path, configuration: Self.configuration)
        if !sql.isEmpty {
            try queue.inDatabase { db in try db.execute(sql: sql) }
        }
        try queue.close()
    }

    func merge(into output: String? = nil) throws(DatabaseMergeError) -> DatabaseMergeReport {
        try DatabaseMerge.merge(base: base, ours: ours, theirs: theirs, into: output ?? self.output)
    }

    /// The merge's error code, or nil if it merged.
    func failure() -> DatabaseMergeErrorCode? {
        do {
            _ = try merge()
            return nil
        } catch {
            return error.code
        }
    }

    /// The rows a query returns from the output (or another database), each as its values
    /// written with their types ("1", "1.0", "'1'", "x'01'", "NULL") and joined by "|".
    func rows(_ sql: String, in path: String? = nil) throws -> [String] {
        let queue = try DatabaseQueue(path: path ?? output, configuration: Self.configuration)
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            try Row.fetchAll(db, sql: sql).map { row in row.databaseValues.map(Self.render).joined(separator: "|") }
        }
    }

    /// The names in the folder other than the three inputs and the output.
    func strayFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { !["base.db", "ours.db", "theirs.db", "merged.db"].contains($0) }.sorted()
    }

    /// Foreign keys off, as SQLite has them by default; double-quoted literals accepted, as
    /// SQLite does by default; no fsync (the test's files need not survive a power cut).
    static var configuration: Configuration {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        configuration.foreignKeysEnabled = false
        configuration.acceptsDoubleQuotedStringLiterals = true
        return configuration
    }

    static func render(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "NULL"
        case .int64(let number): "\(number)"
        case .double(let number): "\(number)"
        case .string(let text): "'\(text)'"
        case .blob(let data): "x'" + data.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "'"
        }
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

extension DatabaseFixture {
    /// Runs statements one by one on a database; those SQLite refuses for a constraint (a
    /// UNIQUE value taken) are skipped: the app could not have made those changes.
    func executeEach(_ statements: [String], in path: String) throws {
        let queue = try DatabaseQueue(path: path, configuration: Self.configuration)
        try queue.inDatabase { db in
            for statement in statements {
                do {
                    try db.execute(sql: statement)
                } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                    continue
                }
            }
        }
        try queue.close()
    }
}
