import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import GRDB
import ItemModel
import MetadataStore
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// Two devices change one SQLite database (issue 40): rows changed on one side only merge
/// into one database on both, which SQLite checks whole; a row both changed, a journal not
/// checkpointed, or database merging off keeps the conflict copy, saying why.
@Suite struct DatabaseSyncMergeTests {
    /// A database file's bytes after `sql` ran on `bytes` (a new database if none).
    static func database(_ sql: String, on bytes: [UInt8] = []) throws -> [UInt8] {
        let path = try TemporaryDirectories.make("ubiqfs-db") + "/app.db"
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        if !bytes.isEmpty { try #require(FileManager.default.createFile(atPath: path, contents: Data(bytes))) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
        return Array(try #require(FileManager.default.contents(atPath: path)))
    }

    /// The rows of `notes`, in key order, and SQLite's own verdict on the whole file.
    static func rows(_ bytes: [UInt8]) throws -> (rows: [String], integrity: String) {
        let path = try TemporaryDirectories.make("ubiqfs-db") + "/app.db"
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        try #require(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (try String.fetchAll(db, sql: "SELECT id || '=' || body FROM notes ORDER BY id"), try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "")
        }
    }

    static let schema = """
        CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL);
        INSERT INTO notes VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four');
        """

    /// a and b share `app.db`; a runs `theirs`, syncs; b runs `ours`, syncs; a syncs. b's tree.
    static func edit(
        theirs: String, ours: String, kinds: [String: Bool] = ["sqlite": true], beside: [String: String] = [:], schema: String = Self.schema
    ) async throws -> (tree: [String: [UInt8]], conflicts: [String], a: TestDevice, b: TestDevice) {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        _ = try await a.engine.setMerge(kinds)
        let base = try Self.database(schema)
        try await a.write("app.db", base)
        try await a.sync()
        try await b.sync()
        try await a.write("app.db", try Self.database(theirs, on: base))
        try await a.sync()
        try await b.write("app.db", try Self.database(ours, on: try await b.readBytes("app.db")))
        for (name, content) in beside { try await b.write(name, content) }
        try await b.sync()
        try await a.sync()
        var tree: [String: [UInt8]] = [:]
        for path in try await b.tree().keys { tree[path] = try await b.readBytes(path) }
        #expect(try await a.tree().keys.sorted() == tree.keys.sorted())
        return (tree, await b.engine.status().conflicts, a, b)
    }

    @Test func rowsChangedOnOneSideOnlyMergeIntoOneDatabase() async throws {
        let result = try await Self.edit(
            theirs: "INSERT INTO notes VALUES (10, 'from a'); UPDATE notes SET body = 'two, a' WHERE id = 2",
            ours: "INSERT INTO notes VALUES (20, 'from b'); DELETE FROM notes WHERE id = 4; UPDATE notes SET body = 'three, b' WHERE id = 3"
        )
        #expect(result.tree.keys.sorted() == ["app.db"] && result.conflicts.isEmpty, "\(result.conflicts)")
        let merged = try Self.rows(try #require(result.tree["app.db"]))
        #expect(merged.rows == ["1=one", "2=two, a", "3=three, b", "10=from a", "20=from b"] && merged.integrity == "ok")
        #expect(try await result.a.readBytes("app.db") == result.tree["app.db"])
        for device in [result.a, result.b] {
            let versions = try device.core.versions(try #require(device.inode("app.db"))).versions
            #expect(versions.map(\.input) == [0, 1, 0, 0] && versions[0].mergeKind == "sqlite", "\(versions.map(\.name))")
        }
        #expect(await result.b.engine.status().merges?.count == 1)
        #expect(result.b.engine.metrics.merges.value == 1 && result.b.engine.metrics.conflicts.value == 0)
        await result.a.shutdown()
        await result.b.shutdown()
    }

    @Test(arguments: [
        ("a row both changed", "UPDATE notes SET body = 'a' WHERE id = 2", "UPDATE notes SET body = 'b' WHERE id = 2", ["sqlite": true], [:], "changed on both sides"),
        ("merging off", "INSERT INTO notes VALUES (10, 'a')", "INSERT INTO notes VALUES (20, 'b')", ["sqlite": false], [:], "merging of SQLite databases is off"),
        ("a WAL not checkpointed", "INSERT INTO notes VALUES (10, 'a')", "INSERT INTO notes VALUES (20, 'b')", ["sqlite": true], ["app.db-wal": "frames"], "write-ahead log app.db-wal is not checkpointed"),
        ("a hot journal", "INSERT INTO notes VALUES (10, 'a')", "INSERT INTO notes VALUES (20, 'b')", ["sqlite": true], ["app.db-journal": "pages"], "rollback journal app.db-journal is beside it"),
        ("a schema change", "INSERT INTO notes VALUES (10, 'a')", "ALTER TABLE notes ADD COLUMN tag TEXT", ["sqlite": true], [:], "(not merged: schema differs between base and ours: table notes)"),
    ])
    func whatCannotMergeKeepsTheCopy(what: String, theirs: String, ours: String, kinds: [String: Bool], beside: [String: String], says: String) async throws {
        let result = try await Self.edit(theirs: theirs, ours: ours, kinds: kinds, beside: beside)
        let copies = result.tree.keys.filter { $0.hasPrefix("app (conflict from b ") }
        let merges = await result.b.engine.status().merges ?? []
        #expect(copies.count == 1, "\(what): \(result.tree.keys.sorted()) \(merges)")
        #expect(result.conflicts.count == 1 && result.conflicts[0].contains(says), "\(what): \(result.conflicts)")
        for path in ["app.db"] + copies { #expect(try Self.rows(try #require(result.tree[path])).integrity == "ok", "\(what): \(path)") }
        await result.a.shutdown()
        await result.b.shutdown()
    }

    /// The bound on what merges (64 MiB): rows changed on each side of a database just
    /// over it keep the copy and say why; the same edits just under it merge (the control).
    /// Each holds several copies in memory, so it runs while no test measures memory.
    @Test(arguments: [(63, true), (64, false)])
    func aDatabaseOverSixtyFourMiBKeepsTheCopy(blobMiB: Int, merges: Bool) async throws {
        try await ResidentMemory.exclusive { try await Self.overSixtyFourMiB(blobMiB: blobMiB, merges: merges) }
    }

    static func overSixtyFourMiB(blobMiB: Int, merges: Bool) async throws {
        let schema = Self.schema + "CREATE TABLE blobs(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO blobs VALUES (1, zeroblob(\(blobMiB << 20)));"
        let result = try await Self.edit(theirs: "INSERT INTO notes VALUES (10, 'a')", ours: "INSERT INTO notes VALUES (20, 'b')", schema: schema)
        let size = try #require(result.tree["app.db"]).count
        #expect((size <= 64 << 20) == merges, "\(size)")
        let copies = result.tree.keys.filter { $0.hasPrefix("app (conflict from b ") }
        if merges {
            #expect(copies.isEmpty && result.conflicts.isEmpty, "\(result.conflicts)")
            #expect(try Self.rows(try #require(result.tree["app.db"])).rows == ["1=one", "2=two", "3=three", "4=four", "10=a", "20=b"])
        } else {
            #expect(copies.count == 1 && result.conflicts.count == 1 && result.conflicts[0].contains("(not merged: larger than 64 MiB)"), "\(result.conflicts)")
        }
        await result.a.shutdown()
        await result.b.shutdown()
    }

    /// A merge's workspace left in the cache's temporary folder by a crash (three copies
    /// of a database, up to 64 MiB each) is gone at the next start, as a temporary file is.
    @Test func aWorkspaceLeftByACrashIsClearedAtTheNextStart() throws {
        let directory = try TemporaryDirectories.make("ubiqfs-cache")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try ContentCache(directory: directory)
        let workspace = directory + "/tmp/.ubiqfs-dbmerge-Ab12Cd"
        try FileManager.default.createDirectory(atPath: workspace, withIntermediateDirectories: false)
        for name in ["base.db", "ours.db", "ours.db-wal"] { try #require(FileManager.default.createFile(atPath: workspace + "/" + name, contents: Data("x".utf8))) }
        try #require(FileManager.default.createFile(atPath: directory + "/tmp/download", contents: Data("x".utf8)))
        _ = try ContentCache(directory: directory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp").isEmpty)
    }
}
