import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// Thumbnails as format 3 carries them (docs/CONTAINER-FORMAT.md, "Thumbnails"): a
/// thumbnail another device committed stays with the content it shows through renames
/// and chmods, is kept by collection while that content is, and goes with it.
@Suite struct ThumbnailRecordTests {
    @Test func aThumbnailLivesAndIsCollectedWithItsContent() async throws {
        let root = try TemporaryDirectories.make("ubiqfs-thumbnails")
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let a = try await TestDevice(store: store, name: "a", configuration: CollectionTests.formatTwo(grace: CollectionTests.shortGrace))
        try await a.write("photo.jpg", String(repeating: "p", count: 300_000))
        try await a.sync()
        let ino = try #require(a.inode("photo.jpg"))
        let id = try #require(try await a.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID
        func base() async throws -> ItemSnapshot { try #require(try await a.metadata.read { db in try BaseSnapshots.find(id, db) }) }

        // Another device's thumbnail of this content: its PNG in a block of its own.
        let png = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let key = ContainerLayout.blockKey(ContentHasher.sha256Hex(png))
        try await store.put(key, png)
        var item = try await base()
        item.thumbnails = [Thumbnail(size: 256, blocks: [BlockReference(hash: ContentHasher.sha256Hex(png), length: Int64(png.count))])]
        let upsert = String(decoding: try RecordCodec.encode(JournalOperation.upsert(item)), as: UTF8.self)
        var journal = try await HandWrittenRecords(store: store)
        try await journal.append(HandWrittenRecords.record(ops: "[\(upsert)]", format: 3))
        try await a.sync()
        #expect(try await base().thumbnails?.count == 1)
        #expect(try a.core.versions(ino).versions.count == 1, "a thumbnail is no version")

        // A rename and a chmod here keep it: the pushed upserts carry it.
        try a.rename("photo.jpg", "holiday.jpg")
        _ = try await a.core.setAttributes(ino, AttributeChanges(mode: 0o600), handle: nil)
        try await a.sync()
        #expect(try await base().thumbnails?.count == 1)
        _ = try await a.engine.setRetention(versions: 0, trash: 0)
        _ = try await a.engine.collect(grace: CollectionTests.shortGrace)
        #expect(try await store.exists(key), "kept while the content it shows is")

        // New content without a picture: the old one goes with the old content.
        try await a.write("holiday.jpg", String(repeating: "q", count: 300_000))
        try await a.sync()
        #expect(try await base().thumbnails == nil)
        let report = try await a.engine.collect(grace: CollectionTests.shortGrace)
        #expect(!(try await store.exists(key)), "collected with its content: \(report)")
        await a.shutdown()
    }
}
