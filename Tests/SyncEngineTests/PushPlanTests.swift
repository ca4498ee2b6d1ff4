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
    @Test func aRecordTakesParentsFirstAndUploadsOnlyWhatItCarries() async throws {
        let store = InMemoryStore()
        var configuration = SyncConfiguration()
        configuration.maxOperationsPerRecord = 5
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
        let (chosen, settled) = try await device.metadata.read { db in try PushPlan.choose(rows: rows, limit: 5, db) }
        #expect(chosen.map(\.itemName.description).prefix(2) == ["top", "inner"])
        #expect(chosen.count == 5)
        #expect(settled.count == 1)

        let blocksBefore = store.keys.filter { $0.hasPrefix(ContainerLayout.blockPrefix) }.count
        #expect(try await device.engine.push() == .committed)
        let blocksAfter = store.keys.filter { $0.hasPrefix(ContainerLayout.blockPrefix) }.count
        // The record held the two folders and three files: three uploads, not twelve.
        #expect(blocksAfter - blocksBefore == 3)
        let pending = try await device.metadata.read { db in try ItemRow.dirtyRows(db).count }
        #expect(pending == 9)
        try await device.sync()
        #expect(try await device.metadata.read { db in try ItemRow.dirtyRows(db).count } == 0)
        #expect(store.keys.filter { $0.hasPrefix(ContainerLayout.blockPrefix) }.count - blocksBefore == 12)
        await device.shutdown()
    }
}
