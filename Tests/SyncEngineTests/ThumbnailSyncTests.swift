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
import ThumbnailService
import Thumbnails

/// Thumbnails travel with the container (issue 39): the device that uploads a photo makes
/// its pictures and commits them with it; another device installs them in its desktop
/// cache, under the URI, mtime and size a viewer checks, and keeps them there as the file
/// moves, changes and goes, without downloading the photo.
@Suite(.serialized) struct ThumbnailSyncTests {
    struct Pair {
        var store: LocalFolderStore
        var a: TestDevice
        var b: TestDevice
        var cacheA: FreedesktopCache
        var cacheB: FreedesktopCache

        func shutdown() async {
            await a.shutdown()
            await b.shutdown()
        }

        /// A's push, its pictures made and pushed, and B's pull with its entries written.
        func settle() async throws {
            try await a.sync()
            await a.thumbnails?.settle()
            try await a.sync()
            try await b.sync()
            await b.thumbnails?.settle()
        }
    }

    static func pair(
        _ configuration: SyncConfiguration = SyncConfiguration(), joining: SyncConfiguration? = nil
    ) async throws -> Pair {
        let root = try TemporaryDirectories.make("ubiqfs-thumbnail-sync")
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let settingsA = ThumbnailSettings(cacheRoot: root + "/cache-a/thumbnails", mountpoint: "/mnt/a")
        let settingsB = ThumbnailSettings(cacheRoot: root + "/cache-b/thumbnails", mountpoint: "/mnt/photos of b")
        let a = try await TestDevice(store: store, name: "a", configuration: configuration, thumbnails: settingsA)
        let b = try await TestDevice(store: store, name: "b", configuration: joining ?? configuration, thumbnails: settingsB)
        return Pair(store: store, a: a, b: b, cacheA: FreedesktopCache(root: settingsA.cacheRoot!), cacheB: FreedesktopCache(root: settingsB.cacheRoot!))
    }

    static func uri(_ path: String, on mountpoint: String = "/mnt/photos of b") -> String {
        ThumbnailURI.fileURI(path: Array((mountpoint + "/" + path).utf8))
    }

    func state(_ device: TestDevice, _ path: String) throws -> String {
        String(decoding: try device.core.getXattr(try #require(device.inode(path)), name: Array("user.ubiqfs.state".utf8)), as: UTF8.self)
    }

    func base(_ device: TestDevice, _ path: String) async throws -> ItemSnapshot? {
        let ino = try #require(device.inode(path))
        return try await device.metadata.read { db in
            guard let row = try ItemRow.find(ino: ino, db) else { return nil }
            return try BaseSnapshots.find(row.itemID, db)
        }
    }

    @Test func aPhotoShowsItsThumbnailOnAnotherDeviceWithoutItsDownload() async throws {
        let pair = try await Self.pair()
        let (a, b) = (pair.a, pair.b)
        try a.mkdir("Holiday")
        try await a.write("Holiday/beach.jpg", try await TestPhotos.jpeg(colour: "#2060d0"))
        try await pair.settle()

        let committed = try #require(try await base(a, "Holiday/beach.jpg"))
        #expect(committed.thumbnails?.map(\.size) == [256, 512], "A made 256 and 512 px pictures")
        #expect(try a.core.versions(try #require(a.inode("Holiday/beach.jpg"))).versions.count == 1, "a picture is no version")

        let uri = Self.uri("Holiday/beach.jpg")
        let large = try #require(pair.cacheB.entry(uri: uri, size: 256), "B has the large entry")
        let normal = try #require(pair.cacheB.entry(uri: uri, size: 128), "and the normal one, made from it")
        let text = try PNGText.text(large)
        let attributes = try b.core.attributes(try #require(b.inode("Holiday/beach.jpg")))
        #expect(text["Thumb::URI"] == uri)
        #expect(text["Thumb::MTime"] == String(attributes.mtime / 1_000_000_000))
        #expect(text["Thumb::Size"] == String(attributes.size))
        let (width, height) = try PNGText.dimensions(large)
        let small = try PNGText.dimensions(normal)
        #expect(max(width, height) == 256 && max(small.width, small.height) == 128)
        let (red, green, blue) = try await TestPhotos.meanColour(large)
        #expect(abs(red - 0x20) < 16 && abs(green - 0x60) < 16 && abs(blue - 0xd0) < 16, "the picture is of the photo: \(red) \(green) \(blue)")
        #expect(try state(b, "Holiday/beach.jpg") == "placeholder", "B never downloaded the photo")

        // B reads the photo, then evicts it: the entry stays valid (the same mtime and size).
        let photo = try #require(b.inode("Holiday/beach.jpg"))
        _ = try await b.readBytes("Holiday/beach.jpg")
        try b.core.setXattr(photo, name: Array("user.ubiqfs.evict".utf8), value: [49], flags: 0)
        #expect(try state(b, "Holiday/beach.jpg") == "placeholder")
        await b.thumbnails?.settle()
        #expect(pair.cacheB.isCurrent(uri: uri, sizes: [128, 256], mtime: attributes.mtime / 1_000_000_000, size: attributes.size))

        // A rename there moves the entry here; a new version replaces it; a delete removes it.
        try a.rename("Holiday", "Summer")
        try await pair.settle()
        #expect(pair.cacheB.entry(uri: uri, size: 256) == nil)
        let moved = try #require(pair.cacheB.entry(uri: Self.uri("Summer/beach.jpg"), size: 256))
        #expect(try PNGText.stripped(moved) == PNGText.stripped(large), "the same picture")
        #expect(try PNGText.text(moved)["Thumb::URI"] == Self.uri("Summer/beach.jpg"))

        try await a.write("Summer/beach.jpg", try await TestPhotos.jpeg(colour: "#d04020"))
        try await pair.settle()
        let replaced = try #require(pair.cacheB.entry(uri: Self.uri("Summer/beach.jpg"), size: 256))
        let newColour = try await TestPhotos.meanColour(replaced)
        #expect(newColour.0 > 0xa0 && newColour.2 < 0x60, "the new version's picture: \(newColour)")
        let after = try b.core.attributes(try #require(b.inode("Summer/beach.jpg")))
        #expect(try PNGText.text(replaced)["Thumb::MTime"] == String(after.mtime / 1_000_000_000))

        try a.remove("Summer/beach.jpg")
        try await pair.settle()
        #expect(pair.cacheB.entry(uri: Self.uri("Summer/beach.jpg"), size: 256) == nil)
        #expect(pair.cacheB.entry(uri: Self.uri("Summer/beach.jpg"), size: 128) == nil)
        await pair.shutdown()
    }

    /// Another client's delete of a folder alone (its items not listed) removes the
    /// entries of the pictures inside it.
    @Test func aFolderDeletedElsewhereTakesItsEntries() async throws {
        let pair = try await Self.pair()
        let (a, b) = (pair.a, pair.b)
        try a.mkdir("Trip")
        try a.mkdir("Trip/Day 1")
        try await a.write("Trip/Day 1/lake.jpg", try await TestPhotos.jpeg(colour: "#40a060"))
        try await a.write("kept.jpg", try await TestPhotos.jpeg(colour: "#a04060"))
        try await pair.settle()
        #expect(pair.cacheB.entry(uri: Self.uri("Trip/Day 1/lake.jpg"), size: 256) != nil)
        let folder = try #require(try await base(a, "Trip")).id
        let delete = String(decoding: try RecordCodec.encode(JournalOperation.delete(folder)), as: UTF8.self)
        var journal = try await HandWrittenRecords(store: pair.store)
        try await journal.append(HandWrittenRecords.record(ops: "[\(delete)]", format: 3))
        try await b.sync()
        await b.thumbnails?.settle()
        #expect(b.inode("Trip") == nil)
        #expect(pair.cacheB.entry(uri: Self.uri("Trip/Day 1/lake.jpg"), size: 256) == nil)
        #expect(pair.cacheB.entry(uri: Self.uri("Trip/Day 1/lake.jpg"), size: 128) == nil)
        #expect(pair.cacheB.entry(uri: Self.uri("kept.jpg"), size: 256) != nil, "the others stay")
        await pair.shutdown()
    }

    /// In an encrypted container the pictures are sealed like content: no PNG in the store.
    @Test func anEncryptedContainerHoldsNoPictureInTheClear() async throws {
        let pair = try await Self.pair(EncryptionTests.configuration(encrypt: true), joining: EncryptionTests.configuration())
        try await pair.a.write("secret.jpg", try await TestPhotos.jpeg(colour: "#6040c0"))
        try await pair.settle()
        let picture = try #require(pair.cacheB.entry(uri: Self.uri("secret.jpg"), size: 256))
        let colour = try await TestPhotos.meanColour(picture)
        #expect(abs(colour.0 - 0x60) < 16 && abs(colour.2 - 0xc0) < 16)
        let signature: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
        var objects = 0
        for path in try FileManager.default.subpathsOfDirectory(atPath: pair.store.base) {
            guard let data = FileManager.default.contents(atPath: pair.store.base + "/" + path) else { continue }
            objects += 1
            #expect(Array(data).firstRange(of: signature) == nil, "\(path) holds a PNG in the clear")
        }
        #expect(objects > 3)
        // The control: the picture itself does begin so.
        #expect(Array(picture.prefix(8)) == signature)
        await pair.shutdown()
    }

    /// A device stopped before its pictures were made makes them at its next start; a
    /// file no thumbnailer takes is noted, and not tried again.
    @Test func picturesAStopLeftUnmadeAreMadeAtTheNextStart() async throws {
        let root = try TemporaryDirectories.make("ubiqfs-thumbnail-restart")
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let first = try await TestDevice(store: store, name: "a")
        try await first.write("sunset.jpg", try await TestPhotos.jpeg(colour: "#e08020"))
        try await first.write("broken.jpg", [UInt8](repeating: 0x42, count: 50_000))
        try await first.write("notes.txt", "not a picture")
        try await first.sync()
        try await first.cleanStop()

        let settings = ThumbnailSettings(cacheRoot: root + "/cache/thumbnails", mountpoint: "/mnt/a")
        let again = try await TestDevice(store: store, name: "a", stateDir: first.stateDir, thumbnails: settings)
        await again.thumbnails?.settle()
        try await again.sync()
        #expect(try await base(again, "sunset.jpg")?.thumbnails?.map(\.size) == [256, 512])
        #expect(try await base(again, "broken.jpg")?.thumbnails == nil)
        #expect(try await base(again, "notes.txt")?.thumbnails == nil)
        let broken = try #require(try await base(again, "broken.jpg"))
        #expect(try await again.metadata.read { db in try MadeThumbnails.hasFailed(broken.id, content: broken.blocks ?? [], db) })
        let unpictured = try await again.metadata.read { db in try MadeThumbnails.unpictured(db) }.map { String(decoding: $0.name, as: UTF8.self) }
        #expect(Set(unpictured) == ["broken.jpg", "notes.txt"], "what a start finds: \(unpictured)")
        try await again.cleanStop()
    }

    /// Pictures of many files in records cut to fit: each goes in some record, none is lost.
    @Test func picturesOfRecordsCutToFitAllArrive() async throws {
        var configuration = SyncConfiguration()
        configuration.maxRecordBytes = 2500
        let pair = try await Self.pair(configuration)
        let colours = ["#c03030", "#30c030", "#3030c0", "#c0c030", "#30c0c0", "#c030c0", "#808030", "#308080"]
        for (index, colour) in colours.enumerated() {
            try await pair.a.write("photo-\(index).jpg", try await TestPhotos.jpeg(colour: colour, width: 400, height: 300))
        }
        try await pair.settle()
        for index in colours.indices {
            #expect(try await base(pair.a, "photo-\(index).jpg")?.thumbnails?.map(\.size) == [256, 512], "photo-\(index).jpg")
            #expect(pair.cacheB.entry(uri: Self.uri("photo-\(index).jpg"), size: 256) != nil, "photo-\(index).jpg on b")
        }
        #expect(try await pair.a.metadata.read { db in try MadeThumbnails.items(db) }.isEmpty)
        await pair.shutdown()
    }

    @Test func aPictureOfContentReplacedBeforeItsPushIsNeverSent() async throws {
        let pair = try await Self.pair()
        let (a, b) = (pair.a, pair.b)
        try await a.write("cat.jpg", try await TestPhotos.jpeg(colour: "#20c040"))
        try await a.sync()
        await a.thumbnails?.settle()
        // Pictures of the green version wait; the file becomes red before they go out.
        try await a.write("cat.jpg", try await TestPhotos.jpeg(colour: "#c02040"))
        try await a.sync()
        #expect(try await base(a, "cat.jpg")?.thumbnails == nil, "green pictures never went with red content")
        await a.thumbnails?.settle()
        try await pair.settle()
        let picture = try #require(pair.cacheB.entry(uri: Self.uri("cat.jpg"), size: 256))
        let (red, green, _) = try await TestPhotos.meanColour(picture)
        #expect(red > 0xa0 && green < 0x60, "the picture shows the red version: \(red) \(green)")
        let made = try await a.metadata.read { db in try MadeThumbnails.items(db) }
        #expect(made.isEmpty, "nothing left waiting: \(made)")
        _ = b
        await pair.shutdown()
    }

    @Test func aPictureThatIsNotWhatItSaysIsNotInstalled() async throws {
        let pair = try await Self.pair()
        let (a, b) = (pair.a, pair.b)
        try await a.write("doc.jpg", try await TestPhotos.jpeg(colour: "#808080"))
        try await a.sync()
        try await b.sync()
        // Another device's "256 px" picture that is 300 px wide, and one that is no PNG.
        let root = try TemporaryDirectories.make("ubiqfs-wide")
        _ = try await TestPhotos.run("/usr/bin/convert", ["-size", "300x200", "xc:red", root + "/wide.png"])
        let png = Array(try Data(contentsOf: URL(fileURLWithPath: root + "/wide.png")))
        let garbage = [UInt8](repeating: 7, count: 5000)
        var item = try #require(try await base(a, "doc.jpg"))
        var blocks: [BlockReference] = []
        for bytes in [png, garbage] {
            let hash = ContentHasher.sha256Hex(bytes)
            try await pair.store.put(ContainerLayout.blockKey(hash), bytes)
            blocks.append(BlockReference(hash: hash, length: Int64(bytes.count)))
        }
        item.thumbnails = [Thumbnail(size: 256, blocks: [blocks[0]]), Thumbnail(size: 128, blocks: [blocks[1]])]
        let upsert = String(decoding: try RecordCodec.encode(JournalOperation.upsert(item)), as: UTF8.self)
        var journal = try await HandWrittenRecords(store: pair.store)
        try await journal.append(HandWrittenRecords.record(ops: "[\(upsert)]", format: 3))
        try await b.sync()
        await b.thumbnails?.settle()
        #expect(pair.cacheB.entry(uri: Self.uri("doc.jpg"), size: 256) == nil, "a picture larger than its size is refused")
        #expect(pair.cacheB.entry(uri: Self.uri("doc.jpg"), size: 128) == nil)
        #expect(try state(b, "doc.jpg") == "placeholder")
        await pair.shutdown()
    }
}
