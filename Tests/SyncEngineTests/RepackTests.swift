import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// Repacking (format 2): collection moves the named blobs of packs that are mostly garbage
/// into new packs with a record of moves, so spread deletes free their bytes; devices
/// follow the moves without a new version, a conflict or a lost read.
@Suite struct RepackTests {
    /// A writer commits only within a quarter of the grace after listing `gc/` (rule W):
    /// a long grace keeps a loaded machine from retrying pushes (each a new pack). Each
    /// collection here passes its own short grace; no writer races it.
    static var configuration: SyncConfiguration { CollectionTests.formatTwo(grace: .seconds(20)) }

    static func small(_ index: Int) -> [UInt8] { CollectionTests.content(UInt64(1000 + index), size: 4096) }

    static func packBytes(_ store: InMemoryStore) async throws -> Int64 {
        try await store.listAllObjects(prefix: ContainerLayout.packPrefix).reduce(0) { $0 + $1.size }
    }

    /// 40 small files in one pack, 30 of them deleted (every other one and then some):
    /// the pack is a quarter named. Retention 0, so only the tree names blobs.
    static func mostlyGarbage(_ store: InMemoryStore) async throws -> TestDevice {
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration)
        // Paused while writing, so one push takes all 40 (one pack), however loaded the machine.
        await a.engine.pause()
        try a.mkdir("d")
        for index in 0..<40 { try await a.write("d/f\(index)", Self.small(index)) }
        await a.engine.resume()
        try await a.sync()
        #expect(store.count(under: ContainerLayout.packPrefix) == 1)
        for index in 0..<40 where index % 4 != 0 { try a.remove("d/f\(index)") }
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        try await a.sync()
        return a
    }

    @Test func aPackThatIsMostlyGarbageIsRepackedAndEveryDeviceReadsItsFiles() async throws {
        let store = InMemoryStore()
        let a = try await Self.mostlyGarbage(store)
        // b knows the files' old places: one is local, the others placeholders.
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration)
        #expect(try await b.readBytes("d/f0") == Self.small(0))
        let id = try await Self.row(b, "d/f4").itemID
        let versionsBefore = try await b.metadata.read { db in try FileVersions.list(id, db).count }

        let report = try await a.engine.collect(grace: .milliseconds(100))
        #expect(report.repacked == 1 && report.relocated == 10 && report.repackedBytes == 10 * 4096, "\(report)")
        #expect(report.deleted == 1 && report.deletedBytes == 40 * 4096, "\(report)")
        #expect(try await Self.packBytes(store) == 10 * 4096)

        try await b.sync()
        for index in stride(from: 0, to: 40, by: 4) { #expect(try await b.readBytes("d/f\(index)") == Self.small(index)) }
        // A move is no new content: no version.
        let versionsAfter = try await b.metadata.read { db in try FileVersions.list(id, db).count }
        #expect(versionsAfter == versionsBefore)
        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration)
        for index in stride(from: 0, to: 40, by: 4) { #expect(try await c.readBytes("d/f\(index)") == Self.small(index)) }
        // Nothing left to repack: the next run moves nothing.
        let again = try await a.engine.collect(grace: .milliseconds(100))
        #expect(again.repacked == nil && again.deleted == 0, "\(again)")
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func anEditMadeBeforeTheMoveIsPushedAfterItWithoutAConflict() async throws {
        let store = InMemoryStore()
        let a = try await Self.mostlyGarbage(store)
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration)
        // b edits a kept file and changes another's mode while a repacks; b pushes after.
        await b.engine.pause()
        try await b.write("d/f4", "b's edit")
        _ = try await b.core.setAttributes(try #require(b.inode("d/f8")), AttributeChanges(mode: 0o600), handle: nil)
        _ = try await a.engine.collect(grace: .milliseconds(100))
        await b.engine.resume()
        try await b.sync()
        try await a.sync()
        let tree = try await a.tree()
        #expect(!tree.keys.contains { $0.contains("conflict") }, "\(tree.keys.sorted())")
        #expect(try await a.read("d/f4") == "b's edit")
        #expect(try await a.readBytes("d/f8") == Self.small(8))
        #expect(try await b.readBytes("d/f12") == Self.small(12))
        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration)
        #expect(try await c.readBytes("d/f8") == Self.small(8))
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func aFillBegunBeforeTheMoveFindsTheBlobWhereItWent() async throws {
        let store = InMemoryStore()
        let a = try await Self.mostlyGarbage(store)
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration)
        let ino = try #require(b.inode("d/f16"))
        // The fill keeps the old place; the pack there is deleted by the sweep.
        let fill = try #require(try await b.engine.downloads.startFill(ino))
        #expect(fill.blocks.first?.pack != nil)
        _ = try await a.engine.collect(grace: .milliseconds(100))
        #expect(try await !store.exists(ContainerLayout.location(of: fill.blocks[0]).key))
        try await b.sync()
        #expect(try await b.readBytes("d/f16") == Self.small(16))
        #expect(try await b.waitUntilLocal("d/f16"), "the fill did not complete after the move")
        for device in [a, b] { await device.shutdown() }
    }

    @Test func forgedMovesAreRefusedOrServeNoWrongBytes() async throws {
        let store = InMemoryStore()
        let a = try await Self.mostlyGarbage(store)
        let block = try #require(try await Self.row(a, "d/f4").blockList.first)
        let pack = try #require(block.pack)
        // A pack that holds f8's bytes where a forged move says f4's are.
        let fake = ItemID.random().rawValue
        try await store.put(ContainerLayout.packKey(fake), Self.small(8))
        var record = JournalRecord(device: "forger", deviceName: "forger", commit: "x", time: 1, ops: [])
        record.format = 2
        record.relocate = [
            BlobMove(hash: block.hash, length: block.length, from: pack, pack: pack, offset: 0),
            BlobMove(hash: block.hash, length: block.length, from: pack, pack: fake, offset: 0),
        ]
        let seq = await a.engine.status().lastSeq + 1
        #expect(try await store.putIfAbsent(ContainerLayout.journalKey(seq), try RecordCodec.encode(record)))
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration)
        #expect(await b.engine.status().errors.contains { $0.contains("journal \(seq): 1 malformed blob moves refused") })
        await #expect(throws: (any Error).self) { try await b.readBytes("d/f4") }
        #expect(try await b.readBytes("d/f8") == Self.small(8))
        #expect(try await b.readBytes("d/f12") == Self.small(12))
        for device in [a, b] { await device.shutdown() }
    }

    static func row(_ device: TestDevice, _ path: String) async throws -> ItemRow {
        let ino = try #require(device.inode(path))
        return try #require(try await device.metadata.read { db in try ItemRow.find(ino: ino, db) })
    }
}
