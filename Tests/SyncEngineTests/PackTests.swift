import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// Format 2 (experimental): small files travel in packs, one `PUT` for many, and are read
/// back with ranged `GET`s; a device where format 2 is not enabled refuses the container.
@Suite struct PackTests {
    static var formatTwo: SyncConfiguration {
        var configuration = SyncConfiguration()
        configuration.experimentalFormat = true
        return configuration
    }

    static func content(_ index: Int) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(index) + 1)
        return (0..<(index * 97 % 20000)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }

    @Test func smallFilesShareOnePackAndLargeOnesKeepTheirBlocks() async throws {
        let store = TransferOverlapTests.FarStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        #expect(try RecordCodec.decode(ContainerInfo.self, from: try await store.base.get(ContainerLayout.infoKey)).format == 2)
        try a.mkdir("src")
        for index in 0..<200 { try await a.write("src/f\(index)", Self.content(index)) }
        var random = SplitMix64(seed: 99)
        let large = (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        try await a.write("large.bin", large)
        try await a.sync()

        // 200 small files (one empty) in one pack; the large file's two blocks on their own.
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 1)
        #expect(store.base.count(under: ContainerLayout.blockPrefix) == 2)
        let calls = store.calls
        #expect(calls.puts == 3 && calls.exists == 1, "\(calls)")

        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo)
        for index in 0..<200 { #expect(try await b.readBytes("src/f\(index)") == Self.content(index)) }
        #expect(try await b.readBytes("large.bin") == large)
        // A change of a packed file goes into a new pack; the old content stays a version.
        try await b.write("src/f7", "changed")
        try await b.sync()
        try await a.sync()
        #expect(try await a.read("src/f7") == "changed")
        #expect(store.base.count(under: ContainerLayout.packPrefix) == 2)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aDeviceWithoutFormatTwoRefusesTheContainerClearly() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        await a.shutdown()
        do {
            _ = try await TestDevice(store: store, name: "old")
            Issue.record("a format-2 container was mounted without format 2 enabled")
        } catch let error as SyncError {
            #expect(error.code == .container)
            #expect(error.message.contains("format 2 is experimental"), "\(error)")
        }
    }

    @Test func aDamagedPackedBlockFailsItsReadOnly() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.formatTwo)
        try await a.write("one", "first file")
        try await a.write("two", "second file")
        try await a.sync()
        let pack = try #require(store.keys.first { $0.hasPrefix(ContainerLayout.packPrefix) })
        var bytes = try await store.get(pack)
        let offset = try #require(String(decoding: bytes, as: UTF8.self).range(of: "second")).lowerBound.utf16Offset(in: String(decoding: bytes, as: UTF8.self))
        bytes[offset] ^= 0xFF
        try await store.put(pack, bytes)
        let b = try await TestDevice(store: store, name: "b", configuration: Self.formatTwo)
        #expect(try await b.read("one") == "first file")
        await #expect(throws: (any Error).self) { try await b.read("two") }
        await a.shutdown()
        await b.shutdown()
    }
}
