import ContainerStore
import DeviceFixture
import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// A push takes at most one record's worth of changes, parents before children, and
/// uploads only the content that record carries: a large import stays linear.
@Suite struct PushPlanTests {
    /// Records of at most `operations` operations, so a few changes span several records.
    static func records(of operations: Int) -> SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.maxOperationsPerRecord = operations
        return configuration
    }

    /// 2,000 bytes of their own for each index.
    static func packed(_ index: Int) -> String { String(String(repeating: "content \(index) ", count: 2000).prefix(2000)) }

    static func packedBytes(_ store: InMemoryStore) async throws -> Int64 {
        try await store.listAllObjects(prefix: ContainerLayout.packPrefix).reduce(0) { $0 + $1.size }
    }

    @Test func aRecordTakesParentsFirstAndUploadsOnlyWhatItCarries() async throws {
        let store = InMemoryStore()
        let configuration = Self.records(of: 5)
        let device = try await TestDevice(store: store, name: "a", configuration: configuration)
        try device.mkdir("top")
        try device.mkdir("top/inner")
        for index in 0..<12 {
            // Distinct content past the inline limit: each file is a blob of its own, packed.
            try await device.write("top/inner/f\(index)", Self.packed(index))
        }
        // Created and deleted before any commit: nothing to send, only to settle.
        try await device.write("gone", "never committed")
        try device.core.unlink(parent: Inode.root, name: Array("gone".utf8), directory: false)

        let rows = try await device.metadata.read { db in try ItemRow.dirtyRows(db) }
        let (ordered, settled) = try await device.metadata.read { db in try PushPlan.order(rows: rows, db) }
        let chosen = Array(ordered.prefix(5))
        #expect(chosen.map(\.itemName.description).prefix(2) == ["top", "inner"])
        #expect(chosen.count == 5)
        #expect(settled.count == 1)

        let before = try await Self.packedBytes(store)
        #expect(try await device.engine.push() == .committed)
        // The record held the two folders and three files: three uploads, not twelve.
        #expect(try await Self.packedBytes(store) - before == 3 * 2000)
        let pending = try await device.metadata.read { db in try ItemRow.dirtyRows(db).count }
        #expect(pending == 9)
        try await device.sync()
        #expect(try await device.metadata.read { db in try ItemRow.dirtyRows(db).count } == 0)
        #expect(try await Self.packedBytes(store) - before == 12 * 2000)
        await device.shutdown()
    }

    /// `sync --wait` promises every change made before it: a backlog longer than a cycle's
    /// 50 rounds of records goes to its end in the one cycle.
    @Test func aBacklogOfMoreThanFiftyRecordsIsPushedInOneCycle() async throws {
        let store = InMemoryStore()
        let configuration = Self.records(of: 2)
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        for index in 0..<130 { try await a.write("f\(index)", "\(index)") }
        try await a.sync()
        #expect(await a.engine.status().pendingItems == 0)
        #expect(store.count(under: ContainerLayout.journalPrefix) >= 65)
        await a.shutdown()
    }

    /// Ordering reads every dirty row, so a backlog is ordered once and each later record
    /// takes the next part of that order, until a local change or another device's record
    /// could have changed it.
    @Test func aBacklogIsOrderedOnceWhileOnlyItsOwnCommitsChangeTheItems() async throws {
        let store = InMemoryStore()
        let configuration = Self.records(of: 5)
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("top")
        for index in 0..<22 { try await a.write("top/f\(index)", "content \(index)") }
        let journal = { store.count(under: ContainerLayout.journalPrefix) }
        let (plans, records) = (await a.engine.fullPushPlans, journal())
        try await a.sync()
        // 23 operations in five records from one order; one more plan finds nothing left.
        #expect(journal() - records == 5)
        #expect(await a.engine.fullPushPlans - plans == 2)

        try a.mkdir("more")
        for index in 0..<20 { try await a.write("more/g\(index)", "more \(index)") }
        let before = await a.engine.fullPushPlans
        #expect(try await a.engine.push() == .committed)
        #expect(try await a.engine.push() == .committed)
        #expect(await a.engine.fullPushPlans - before == 1)
        // A local change: the next record comes from a new order, which has it.
        try await a.write("more/late", "late")
        #expect(try await a.engine.push() == .committed)
        #expect(await a.engine.fullPushPlans - before == 2)
        // Another device's record: planned again too.
        try await b.sync()
        try await b.write("from-b", "b")
        try await b.sync()
        try await a.engine.pull()
        #expect(try await a.engine.push() == .committed)
        #expect(await a.engine.fullPushPlans - before == 3)

        try await a.sync()
        try await b.sync()
        #expect(try await a.metadata.read { db in try ItemRow.dirtyRows(db).count } == 0)
        #expect(try await a.tree() == b.tree())
        #expect(try await b.read("more/late") == "late")
        await a.shutdown()
        await b.shutdown()
    }

    // Between two records every device shows the committed tree: a change split across
    // records must never leave two items with one name there (the others would settle it
    // as a conflict, renaming a file nobody renamed).

    /// A name handed from one item to another: the rename away goes in the same record.
    @Test func aNameHandedOnGoesInOneRecordWithTheRenameAway() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.records(of: 1))
        let b = try await TestDevice(store: store, name: "b")
        // "x" is older than "notes", so the order has it first.
        try await a.write("x", "x")
        try await a.write("notes", "notes")
        try await a.sync()
        try await b.sync()
        try a.rename("notes", "other")
        try a.rename("x", "notes")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["notes": "x", "other": "notes"])
        #expect(await b.engine.status().conflicts.isEmpty)
        #expect(await b.engine.status().pendingItems == 0)
        await a.shutdown()
        await b.shutdown()
    }

    /// A folder deleted and a file made with its name: the folder's delete (deepest-first,
    /// at the end of the order) and its content's go in the file's record.
    @Test func aDeletedFoldersNameTakenGoesInOneRecordWithTheDelete() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.records(of: 2))
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("d")
        try a.mkdir("d/sub")
        try await a.write("d/sub/f", "f")
        try await a.write("d/g", "g")
        try await a.sync()
        try await b.sync()
        try a.remove("d/sub/f")
        try a.remove("d/sub")
        try a.remove("d/g")
        try a.remove("d")
        try await a.write("d", "now a file")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["d": "now a file"])
        #expect(await b.engine.status().conflicts.isEmpty)
        #expect(await b.engine.status().pendingItems == 0)
        await a.shutdown()
        await b.shutdown()
    }

    /// An item moved here into a folder another device deleted stays, in that folder; it
    /// is still where the others have it, so a new item taking its old name brings the
    /// move along (the delete must not make it look new here).
    @Test func anItemMovedIntoAFolderDeletedElsewhereKeepsItsCommittedPlace() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b", configuration: Self.records(of: 1))
        try await a.write("notes", "x")
        try a.mkdir("d")
        try await a.sync()
        try await b.sync()
        try b.rename("notes", "d/notes")
        try a.remove("d")
        try await a.sync()
        try await b.write("notes", "y")
        try await b.sync()
        #expect(await b.engine.status().conflicts.count == 1)
        try await a.sync()
        #expect(try await a.tree() == ["d": "/", "d/notes": "x", "notes": "y"])
        #expect(await a.engine.status().conflicts.isEmpty)
        #expect(try await b.tree() == a.tree())
        await a.shutdown()
        await b.shutdown()
    }

    /// A file still being written is renamed and a new file takes its name (a log
    /// rotated under its writer): the rename goes out with the content last committed,
    /// the new content once the writer is done.
    @Test func aFileBeingWrittenIsRenamedWithItsCommittedContent() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("log", "old lines\n")
        try await a.sync()
        try await b.sync()
        let ino = try #require(a.inode("log"))
        let writer = try await a.open(ino, flags: O_WRONLY | O_APPEND)
        _ = try Array("more lines\n".utf8).withUnsafeBytes { try a.core.write(handle: writer, data: $0, offset: 10) }
        try a.rename("log", "log.1")
        try await a.write("log", "new log\n")
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["log": "new log\n", "log.1": "old lines\n"])
        #expect(await b.engine.status().conflicts.isEmpty)
        // Still being written: its content waits, and is not lost.
        #expect(await a.engine.status().pendingItems == 1)
        #expect(try await a.read("log.1") == "old lines\nmore lines\n")
        a.core.release(handle: writer)
        try await a.sync()
        try await b.sync()
        #expect(try await b.tree() == ["log": "new log\n", "log.1": "old lines\nmore lines\n"])
        #expect(await a.engine.status().pendingItems == 0)
        #expect(await b.engine.status().conflicts.isEmpty)
        await a.shutdown()
        await b.shutdown()
    }
}
