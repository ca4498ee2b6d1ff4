import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// Format 2 (experimental): small files travel in packs, one `PUT` for many, and are read
/// back with ranged `GET`s; a device where format 2 is not enabled refuses the container.
@Suite struct PackTests {
    /// Format 2, as every device now writes it by default.
    static var formatTwo: SyncConfiguration { SyncConfiguration() }

    static func content(_ index: Int) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(index) + 1)
        return (0..<(index * 97 % 20000)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    @Test func smallFilesShareOnePackAndALargeOneHasItsOwn() async throws {
        let store = TransferOverlapTests.FarStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        #expect(try RecordCodec.decode(ContainerInfo.self, from: try await store.base.get(ContainerLayout.infoKey)).format == ContainerInfo.currentFormat)
        try a.mkdir("src")
        for index in 0..<200 { try await a.write("src/f\(index)", Self.content(index)) }
        var random = SplitMix64(seed: 99)
        let large = (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        try await a.write("large.bin", large)
        try await a.sync()

        // 200 small files (one empty, 22 of 1 KiB or less inline) in one pack; the large
        // file's two blocks in a pack of their own. Nothing asks first.
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 2)
        #expect(store.base.count(under: ContainerLayout.blockPrefix) == 0)
        let calls = store.calls
        #expect(calls.puts == 2 && calls.exists == 0, "\(calls)")

        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo)
        for index in 0..<200 { #expect(try await b.readBytes("src/f\(index)") == Self.content(index)) }
        #expect(try await b.readBytes("large.bin") == large)
        // A packed file read alone is one ranged GET; read one after another, the folder
        // is read ahead and neighbours come back together (a GET per run of them). The
        // inline ones and the empty one cost none.
        let packed = (0..<200).filter { Self.content($0).count > BlockReference.inlineLimit }.count
        let gets = store.calls.gets - calls.gets
        #expect(gets > 2 && gets < packed / 2, "\(gets) GETs for \(packed) packed files")
        // A change of a packed file goes into a new pack; the old content stays a version.
        let changed = "changed" + String(repeating: "!", count: 2000)
        try await b.write("src/f7", changed)
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("src/f7") == changed)
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 3)
        await a.shutdown()
        await b.shutdown()
    }

    /// A device of the previous release (format 1 only, as `UBIQFS_FORMAT=1` makes one).
    static var formatOne: SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.newestFormat = 1
        return configuration
    }

    @Test func aDeviceWithoutFormatTwoRefusesTheContainerClearly() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        await a.shutdown()
        do {
            _ = try await TestDevice(store: store, name: "old", configuration: Self.formatOne)
            Issue.record("a format-2 container was mounted by a device of format 1")
        } catch let error as SyncError {
            #expect(error.code == .container)
            #expect(error.message.contains("the container has format \(ContainerInfo.currentFormat); this ubiqfs supports 1; upgrade ubiqfs"), "\(error)")
        }
    }

    @Test func aDamagedPackedBlockFailsItsReadOnly() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        try await a.write("one", "first file" + String(repeating: ".", count: 2000))
        try await a.write("two", "second file" + String(repeating: ".", count: 2000))
        try await a.sync()
        let pack = try #require(store.keys.first { $0.hasPrefix(ContainerLayout.packPrefix) })
        var bytes = try await store.get(pack)
        let offset = try #require(String(decoding: bytes, as: UTF8.self).range(of: "second")).lowerBound.utf16Offset(in: String(decoding: bytes, as: UTF8.self))
        bytes[offset] ^= 0xFF
        try await store.put(pack, bytes)
        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo)
        #expect(try await b.read("one").hasPrefix("first file"))
        await #expect(throws: (any Error).self) { try await b.read("two") }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func tinyFilesTravelInTheirRecordAndTamperedOnesAreRefused() async throws {
        let store = TransferOverlapTests.FarStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        for index in 0..<50 { try await a.write("tiny\(index)", "tiny file number \(index)") }
        try await a.write("edge", String(repeating: "x", count: BlockReference.inlineLimit))
        try await a.sync()
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 0)
        #expect(store.base.count(under: ContainerLayout.blockPrefix) == 0)
        #expect(store.calls.puts == 0 && store.calls.exists == 0, "\(store.calls)")

        // Change one tiny file's bytes inside the record, keeping its length and hash.
        let key = try #require(store.base.keys.filter { $0.hasPrefix(ContainerLayout.journalPrefix) }.max())
        let record = String(decoding: try await store.base.get(key), as: UTF8.self)
        let genuine = Data("tiny file number 7".utf8).base64EncodedString()
        let forged = Data("tiny file number 8".utf8).base64EncodedString()
        #expect(record.contains(genuine))
        try await store.base.put(key, Array(record.replacingOccurrences(of: "\"\(genuine)\"", with: "\"\(forged)\"").utf8))

        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo)
        for index in 0..<50 where index != 7 { #expect(try await b.read("tiny\(index)") == "tiny file number \(index)") }
        #expect(try await b.read("edge").count == BlockReference.inlineLimit)
        await #expect(throws: (any Error).self) { try await b.read("tiny7") }
        #expect(store.calls.gets == 0, "\(store.calls)")
        await a.shutdown()
        await b.shutdown()
    }
}
