import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// The shared trash (`ubiqfs trash`, `trash restore`) and the container's retention
/// (`ubiqfs retention`): the same on every device, from the journal.
@Suite struct TrashAndRetentionTests {
    @Test func aDeletedFolderIsOneEntryOnEveryDeviceAndComesBackWithWhatItHeld() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        try a.mkdir("docs")
        try a.mkdir("docs/sub")
        try await a.write("docs/a.txt", "first")
        try await a.write("docs/sub/b.txt", "second")
        try await a.write("top.txt", "top")
        try await a.sync()
        try await b.sync()
        for path in ["docs/sub/b.txt", "docs/sub", "docs/a.txt", "docs", "top.txt"] { try a.remove(path) }
        try await a.sync()
        try await b.sync()
        // A device that joins later replays the deletes too.
        let c = try await TestDevice(store: store, name: "c")
        for device in [a, b, c] {
            let entries = try device.core.trash()
            #expect(entries.map(\.path).sorted() == ["/docs", "/top.txt"], "\(device.name)")
            let docs = try #require(entries.first { $0.path == "/docs" })
            #expect(docs.items.count == 4 && docs.size == 11 && docs.device == "a" && docs.top.kind == .directory)
            #expect(Set(docs.items.dropFirst().map(\.name.description)) == ["sub", "a.txt", "b.txt"])
        }

        // b brings the folder back; a sees it with its content, and it leaves every trash.
        #expect(try b.core.restoreFromTrash(path: "/docs") == "/docs")
        #expect(try await b.read("docs/sub/b.txt") == "second")
        try await b.sync()
        try await a.sync()
        try await c.sync()
        #expect(try await a.tree() == ["docs": "/", "docs/a.txt": "first", "docs/sub": "/", "docs/sub/b.txt": "second"])
        for device in [a, b, c] { #expect(try device.core.trash().map(\.path) == ["/top.txt"]) }
        #expect(throws: FileSystemError.self) { try a.core.restoreFromTrash(path: "/docs") }
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func aTakenNameGetsAFreeOneAndAnItemComesBackFromInsideADeletedFolder() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try a.mkdir("p")
        try a.mkdir("p/q")
        try await a.write("p/q/f.txt", "old")
        try await a.sync()
        try a.remove("p/q/f.txt")
        try await a.write("p/q/f.txt", "new")
        try await a.sync()
        #expect(try a.core.restoreFromTrash(path: "p/q/f.txt") == "/p/q/f (2).txt")
        #expect(try await a.read("p/q/f (2).txt") == "old")
        try await a.sync()

        for path in ["p/q/f (2).txt", "p/q/f.txt", "p/q", "p"] { try a.remove(path) }
        try await a.sync()
        let folder = try #require(try a.core.trash().first)
        #expect(folder.path == "/p" && folder.items.count == 4)
        // One file from inside the deleted folder: the folders above it come back with it.
        #expect(try a.core.restoreFromTrash(path: "/p/q/f.txt") == "/p/q/f.txt")
        #expect(try await a.tree() == ["p": "/", "p/q": "/", "p/q/f.txt": "new"])
        // The first delete's file is still in the folder's entry.
        #expect(try a.core.trash().map(\.path) == ["/p", "/p/q/f.txt"])
        #expect(try a.core.restoreFromTrash(path: "/p/q/f (2).txt", seq: folder.seq) == "/p/q/f (2).txt")
        #expect(try a.core.trash().isEmpty)
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.tree() == ["p": "/", "p/q": "/", "p/q/f.txt": "new", "p/q/f (2).txt": "old"])
        #expect(throws: FileSystemError.self) { try a.core.restoreFromTrash(path: "/nothing") }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aFolderDeleteSpreadOverRecordsIsOneEntry() async throws {
        let store = InMemoryStore()
        var configuration = SyncConfiguration()
        configuration.maxOperationsPerRecord = 3
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        try a.mkdir("big")
        try a.mkdir("big/sub")
        for index in 0..<5 {
            try await a.write("big/f\(index)", "file \(index)")
            try await a.write("big/sub/g\(index)", "inner \(index)")
        }
        try await a.sync()
        for index in 0..<5 {
            try a.remove("big/f\(index)")
            try a.remove("big/sub/g\(index)")
        }
        try a.remove("big/sub")
        try a.remove("big")
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        for device in [a, b] {
            let entries = try device.core.trash()
            #expect(entries.map(\.path) == ["/big"], "\(device.name): \(entries.map(\.path))")
            #expect(entries.first?.items.count == 12)
        }
        #expect(try b.core.restoreFromTrash(path: "/big") == "/big")
        #expect(try await b.tree().count == 12)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aMissingFolderAboveAnEntryIsMadeAgain() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try a.mkdir("x")
        try a.mkdir("x/y")
        try await a.write("x/y/z.txt", "zed")
        try await a.sync()
        try a.remove("x/y/z.txt")
        try await a.sync()
        try a.remove("x/y")
        try a.remove("x")
        try await a.sync()
        #expect(try a.core.trash().map(\.path) == ["/x", "/x/y/z.txt"])
        #expect(try a.core.restoreFromTrash(path: "/x/y/z.txt") == "/x/y/z.txt")
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.tree() == ["x": "/", "x/y": "/", "x/y/z.txt": "zed"])
        await a.shutdown()
        await b.shutdown()
    }

    @Test func retentionIsTheContainersAndPrunesVersionsAndTrashEverywhere() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", checkpointInterval: 4)
        let b = try await TestDevice(store: store, name: "b")
        try await a.write("f.txt", "one")
        try await a.sync()
        try await a.write("f.txt", "two")
        try await a.write("g.txt", "gone")
        try await a.sync()
        try a.remove("g.txt")
        try await a.sync()
        try await b.sync()
        #expect(try b.core.versions(try #require(b.inode("f.txt"))).versions.count == 2)
        #expect(try b.core.trash().count == 1)
        #expect(try await b.engine.settings() == .standard)

        let set = try await a.engine.setRetention(versions: 0, trash: 0)
        #expect(set.retention == ContainerSettings.Retention(versions: 0, trash: 0))
        try await b.sync()
        for device in [a, b] {
            #expect(try await device.engine.settings() == set)
            #expect(try device.core.versions(try #require(device.inode("f.txt"))).versions.count == 1, "\(device.name)")
            #expect(try device.core.trash().isEmpty, "\(device.name)")
        }
        // A device that starts from a checkpoint (journal 4) has the setting too.
        #expect(store.keys.contains(ContainerLayout.checkpointKey(4)))
        let c = try await TestDevice(store: store, name: "c")
        #expect(try await c.engine.settings() == set)

        // A retention out of range from the store is refused; the one in force stays.
        var forged = JournalRecord(device: "x", deviceName: "x", commit: ItemID.random().rawValue, time: Timestamp.now(), ops: [])
        forged.settings = ContainerSettings(retention: .init(versions: -1, trash: 5))
        try await store.put(ContainerLayout.journalKey(5), try RecordCodec.encode(forged))
        try await c.sync()
        #expect(try await c.engine.settings() == set)
        #expect(await c.engine.status().errors.contains { $0.contains("retention out of range") })
        await #expect(throws: SyncError.self) { try await a.engine.setRetention(versions: -3, trash: nil) }
        for device in [a, b, c] { await device.shutdown() }
    }

    @Test func twoDevicesSettingTwoFieldsKeepBoth() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        _ = try await b.engine.setRetention(versions: nil, trash: 14 * 86400)
        // a has not seen b's record when it sets the other field: its record carries only
        // its change, on top of b's.
        let set = try await a.engine.setRetention(versions: 7 * 86400, trash: nil)
        #expect(set.retention == .init(versions: 7 * 86400, trash: 14 * 86400))
        try await b.sync()
        #expect(try await b.engine.settings() == set)
        await a.shutdown()
        await b.shutdown()
    }
}
