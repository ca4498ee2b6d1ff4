import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import MetadataStore
import SeaweedFSFixture
import SyncEngine
import Testing

/// What one journal record may cost a reader is bounded (`RecordCodec.maxRecordSize`
/// bytes, `JournalRecord.maxOperations` operations), and a writer never writes a record
/// a reader would refuse: it cuts its push instead.
@Suite struct RecordBoundsTests {
    /// A push whose record would pass the byte limit is cut into records under it; the
    /// other device ends with the same tree, folders before what is in them.
    @Test func aPushLargerThanARecordMayBeIsCutAndArrivesWhole() async throws {
        let store = InMemoryStore()
        var configuration = SyncConfiguration()
        configuration.maxRecordBytes = 6 << 10
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        for folder in 0..<4 {
            try a.mkdir("folder\(folder)")
            for file in 0..<12 { try await a.write("folder\(folder)/file \(file) with a long name.txt", "content \(folder)/\(file)") }
        }
        try await a.sync()
        let keys = try await store.listAllObjects(prefix: ContainerLayout.journalPrefix)
        #expect(keys.count > 1, "\(keys.count) records")
        for object in keys { #expect(object.size <= 6 << 10, "\(object.key) is \(object.size) bytes") }
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.tree() == a.tree())
        #expect(await b.engine.status().errors.isEmpty)
        #expect(try await a.metadata.read { db in try ItemRow.dirtyRows(db).count } == 0)
        for device in [a, b] { await device.shutdown() }
    }

    /// One million operations in one record (a writer that never cuts, or a hostile one):
    /// refused from their count before any is decoded, skipped like a malformed record,
    /// and the device goes on. Before, such records were decoded whole (1.57 GB for a
    /// million upserts).
    @Test func aRecordOfAMillionOperationsIsRefusedBeforeItsOperationsAreDecoded() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        try await a.write("kept.txt", "kept")
        try await a.sync()
        let seq = await a.engine.status().lastSeq + 1
        let bytes = Self.recordOfDeletes(1_000_000)
        #expect(bytes.count < RecordCodec.maxRecordSize)
        #expect(try await store.putIfAbsent(ContainerLayout.journalKey(seq), bytes))
        // Resident memory is the whole process's: measured while no other test holds much.
        let grown = try await ResidentMemory.exclusive {
            let before = ResidentMemory.bytes()
            try await a.sync()
            return ResidentMemory.bytes() - before
        }
        #expect(grown < 200 << 20, "resident memory grew by \(grown >> 20) MiB")
        #expect(await a.engine.status().errors.contains { $0.contains("journal record \(seq) skipped") })
        #expect(try await a.tree() == ["kept.txt": "kept"])
        try await a.write("after.txt", "after")
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.tree() == ["kept.txt": "kept", "after.txt": "after"])
        for device in [a, b] { await device.shutdown() }
    }

    /// A record's JSON as a writer that never cuts would send it, made without decoding
    /// anything (so the test itself stays small): `count` deletes of random ids.
    static func recordOfDeletes(_ count: Int) -> [UInt8] {
        var bytes = Array(#"{"commit":"x","device":"other","deviceName":"other","format":1,"ops":["#.utf8)
        bytes.reserveCapacity(count * 50 + 100)
        for index in 0..<count {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += Array(#"{"id":""#.utf8) + Array(ItemID.random().rawValue.utf8) + Array(#"","op":"delete"}"#.utf8)
        }
        bytes += Array(#"],"time":1}"#.utf8)
        return bytes
    }

    /// A journal record larger than `maxRecordSize` (with room for sealing) is refused by
    /// the store read itself, before its bytes are read: one just past the limit (a
    /// checkpoint of that size is still taken), and a sparse one of 4 GiB that costs no
    /// memory (the bound leaves room for the suites running beside it in this process).
    @Test func aJournalRecordLargerThanTheLimitIsNotRead() async throws {
        let root = try TemporaryDirectories.make("ubiqfs-record-bounds")
        let store = try LocalFolderStore(root: root, container: "c")
        let pastLimit = ContainerLayout.largestObject(atKey: ContainerLayout.journalKey(1)) + 1
        #expect(pastLimit < Int64(RecordCodec.maxObjectSize))
        let sizes = [(ContainerLayout.journalKey(1), pastLimit), (ContainerLayout.journalKey(2), Int64(4) << 30), (ContainerLayout.checkpointKey(1), pastLimit)]
        for (key, size) in sizes {
            try await store.put(key, Array("{}".utf8))
            #expect(truncate(store.base + "/" + key, off_t(size)) == 0)
        }
        let grown = try await ResidentMemory.exclusive {
            let before = ResidentMemory.bytes()
            for seq in [1, 2] as [UInt64] {
                await #expect { _ = try await store.get(ContainerLayout.journalKey(seq)) } throws: { ($0 as? StoreError)?.code == .corrupt }
            }
            return ResidentMemory.bytes() - before
        }
        #expect(grown < 1 << 30)
        #expect(try await store.get(ContainerLayout.checkpointKey(1)).count == Int(pastLimit))
    }
}
