import ContainerStore
import Foundation
import GRDB
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

    @Test func aRecordTakesParentsFirstAndUploadsOnlyWhatItCarries() async throws {
        let store = InMemoryStore()
        let configuration = Self.records(of: 5)
        let device = try await TestDevice(store: store, name: "a", configuration: configuration)
        try device.mkdir("top")
        try device.mkdir("top/inner")
        for index in 0..<12 {
            // Distinct content, so every file is a block of its own.
            try await device.write("top/inner/f\(index)", "content \(index)")
        }
        // Created and deleted before any commit: nothing to send, only to settle.
        try await device.write("gone", "never committed")
        try device.core.unlink(parent: ItemRow.rootIno, name: Array("gone".utf8), directory: false)

        let rows = try await device.metadata.read { db in try ItemRow.dirtyRows(db) }
        let (ordered, settled) = try await device.metadata.read { db in try PushPlan.order(rows: rows, db) }
        let chosen = Array(ordered.prefix(5))
        #expect(chosen.map(\.itemName.description).prefix(2) == ["top", "inner"])
        #expect(chosen.count == 5)
        #expect(settled.count == 1)

        let blocksBefore = store.count(under: ContainerLayout.blockPrefix)
        #expect(try await device.engine.push() == .committed)
        let blocksAfter = store.count(under: ContainerLayout.blockPrefix)
        // The record held the two folders and three files: three uploads, not twelve.
        #expect(blocksAfter - blocksBefore == 3)
        let pending = try await device.metadata.read { db in try ItemRow.dirtyRows(db).count }
        #expect(pending == 9)
        try await device.sync()
        #expect(try await device.metadata.read { db in try ItemRow.dirtyRows(db).count } == 0)
        #expect(store.count(under: ContainerLayout.blockPrefix) - blocksBefore == 12)
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
        #expect(try await a.engine.pull())
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
}
