import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// Format 5 (CONTAINER-FORMAT.md, "Splices", "Fine chunks"): a file edited in place is cut
/// fine, and each record of an edit says its blocks as a splice of the last list, as small
/// as the edit; devices that pull it, join later or read it from the document alone get
/// the content exactly, and a splice that does not fit is refused alone.
@Suite struct SpliceRecordTests {
    static func database(_ size: Int, seed: UInt64) -> [UInt8] {
        FileCuttings.sqliteHeader + ChunkPackingTests.random(size - FileCuttings.sqliteHeader.count, seed: seed)
    }

    /// The newest record's bytes and its one upsert's item, as the store has them.
    static func lastUpsert(_ store: any ContainerStore) async throws -> (bytes: Int, item: [String: Any]) {
        let key = try #require(try await store.listAll(prefix: ContainerLayout.journalPrefix).max {
            (ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.journalPrefix) ?? 0) < (ContainerLayout.sequence(ofKey: $1, prefix: ContainerLayout.journalPrefix) ?? 0)
        })
        let bytes = try await store.get(key)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let ops = try #require(record["ops"] as? [[String: Any]])
        let item = try #require(ops.compactMap { $0["item"] as? [String: Any] }.first { ($0["kind"] as? String) == "file" })
        return (bytes.count, item)
    }

    static func blocks(_ device: TestDevice, _ path: String) async throws -> [BlockReference] {
        let ino = try #require(device.inode(path))
        return try #require(try await device.metadata.read { db in try ItemRow.find(ino: ino, db) }).blockList
    }

    /// Pages of an 8 MiB database written in place, three times: each record is a splice of
    /// a few KiB (the first, whole list is the control), its new chunks a few times the
    /// bytes written, and another device, a device joining after, read it exactly.
    @Test func aDatabaseEditedInPlaceGoesAsSplices() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let b = try await TestDevice(store: store, name: "b")
        var content = Self.database(8 << 20, seed: 5)
        try await a.write("notes.db", content)
        try await a.sync()
        let first = try await Self.lastUpsert(store)
        let whole = try #require(first.item["blocks"] as? [Any])
        #expect(whole.count > 150 && first.item["splice"] == nil, "fine chunks from the first upload, listed whole")
        #expect(try await Self.blocks(a, "notes.db").first.map { $0.length < 128 << 10 } == true)
        try await b.sync()
        #expect(try await b.readBytes("notes.db") == content)

        var rng = SplitMix64(seed: 6)
        for round in 0..<3 {
            let before = try await Self.blocks(a, "notes.db")
            for offset in [0, 1 << 20, 5 << 20, (8 << 20) - 4096] {
                let page = (0..<4096).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let at = offset == 0 ? 100 : offset
                try await IncrementalUploadTests.write(a, "notes.db", Array(page.prefix(offset == 0 ? 16 : 4096)), at: at)
                content.replaceSubrange(at..<(at + (offset == 0 ? 16 : 4096)), with: page.prefix(offset == 0 ? 16 : 4096))
            }
            try await a.sync()
            let (bytes, item) = try await Self.lastUpsert(store)
            let splice = try #require(item["splice"] as? [String: Any], "round \(round): \(item.keys.sorted())")
            #expect(item["blocks"] == nil)
            #expect(splice["of"] as? Int == before.count)
            let after = try await Self.blocks(a, "notes.db")
            let new = Set(after).subtracting(before)
            let newBytes = new.reduce(0) { $0 + $1.length }
            print("SpliceRecordTests: round \(round): record \(bytes) bytes (the whole list's was \(first.bytes)), \(new.count) new chunks, \(newBytes) bytes")
            #expect(bytes * 10 < first.bytes, "round \(round): a splice is a fraction of the whole list")
            #expect(newBytes < 1 << 20, "round \(round): \(newBytes) bytes of new chunks for 12 KiB written")
            try await b.sync()
            #expect(try await b.readBytes("notes.db") == content, "round \(round)")
            #expect(try await Self.blocks(b, "notes.db") == after)
        }
        let ino = try #require(b.inode("notes.db"))
        #expect(try b.core.versions(ino).versions.count == 4)
        let fresh = try await TestDevice(store: store, name: "fresh")
        #expect(try await fresh.readBytes("notes.db") == content)
        for device in [a, b, fresh] { await device.shutdown() }
    }

    /// A file cut coarse that a program writes inside is cut fine from its next upload (a
    /// whole list, no block in common), and splices from the one after; a file only ever
    /// appended to, or rewritten whole in place with a line put first, stays coarse (the
    /// controls).
    @Test func aFileWrittenInsideIsCutFineFromThen() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        var image = ChunkPackingTests.random(6 << 20, seed: 7)
        var log = ChunkPackingTests.random(3 << 20, seed: 8)
        var text = ChunkPackingTests.random(3 << 20, seed: 12)
        try await a.write("disk.img", image)
        try await a.write("app.log", log)
        try await a.write("notes.txt", text)
        try await a.sync()
        #expect(try await Self.blocks(a, "disk.img").first?.length == 256 << 10, "coarse: a leading block of 256 KiB")

        let patch = Array("written in place".utf8)
        try await IncrementalUploadTests.write(a, "disk.img", patch, at: 3 << 20)
        image.replaceSubrange((3 << 20)..<((3 << 20) + patch.count), with: patch)
        let tail = ChunkPackingTests.random(200_000, seed: 9)
        try await IncrementalUploadTests.write(a, "app.log", tail, at: log.count)
        log += tail
        text = Array("a new first line\n".utf8) + text
        try await IncrementalUploadTests.write(a, "notes.txt", text, at: 0)
        try await a.sync()
        let fine = try await Self.blocks(a, "disk.img")
        #expect(fine.count > 100 && fine[0].length < 128 << 10, "fine from the write inside: \(fine.count) blocks")
        #expect(try await Self.blocks(a, "app.log").first?.length == 256 << 10, "the control: appends keep it coarse")
        #expect(try await Self.blocks(a, "notes.txt").first?.length == 256 << 10, "the control: a whole rewrite keeps it coarse")

        try await IncrementalUploadTests.write(a, "disk.img", patch, at: 1 << 20)
        image.replaceSubrange((1 << 20)..<((1 << 20) + patch.count), with: patch)
        try await a.sync()
        #expect(try await Self.lastUpsert(store).item["splice"] != nil)
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.readBytes("disk.img") == image)
        #expect(try await b.readBytes("app.log") == log)
        #expect(try await b.readBytes("notes.txt") == text)
        for device in [a, b] { await device.shutdown() }
    }

    /// An edit of a database whose record's reply is lost, the device stopped before a
    /// pull could tell (a crash): after the restart the record is its own, settled with its
    /// splice expanded, and nothing is committed twice (the file is clean, its list the
    /// journal's, and the next edit splices again).
    @Test func aSplicedCommitWhoseReplyWasLostIsSettledAfterARestart() async throws {
        let store = InMemoryStore()
        let link = FaultyStore(store, faults: StoreFaults())
        let a = try await TestDevice(store: link, name: "a")
        var content = Self.database(4 << 20, seed: 13)
        let original = Array(content[(2 << 20)..<((2 << 20) + 4096)])
        try await a.write("notes.db", content)
        try await a.sync()
        let page = Array(repeating: UInt8(7), count: 4096)
        try await IncrementalUploadTests.write(a, "notes.db", page, at: 2 << 20)
        try await a.sync()
        // The page as it was: every chunk is in the store, so only the record is put.
        try await IncrementalUploadTests.write(a, "notes.db", original, at: 2 << 20)
        link.faults = try StoreFaults(parsing: "lost=1")
        let before = try await FaultRecoveryTests.records(in: store)
        var attempts = 0
        while try await FaultRecoveryTests.records(in: store) == before, attempts < 5 {
            await #expect(throws: (any Error).self) { try await a.sync() }
            attempts += 1
        }
        let lost = try await Self.lastUpsert(store).item
        #expect(lost["splice"] != nil, "\(attempts) attempts, \(lost.keys.sorted()), \((lost["blocks"] as? [Any])?.count ?? -1) blocks")
        link.faults = try StoreFaults(parsing: "errors=1")
        await a.shutdown()

        let restarted = try await TestDevice(store: store, name: "a", stateDir: a.stateDir)
        try await restarted.sync()
        let records = try await FaultRecoveryTests.records(in: store)
        #expect(await restarted.engine.status().pendingItems == 0)
        try await restarted.sync()
        #expect(try await FaultRecoveryTests.records(in: store) == records, "committed once")
        try await IncrementalUploadTests.write(restarted, "notes.db", page, at: 1 << 20)
        content.replaceSubrange((1 << 20)..<((1 << 20) + 4096), with: page)
        try await restarted.sync()
        #expect(try await Self.lastUpsert(store).item["splice"] != nil)
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.readBytes("notes.db") == content)
        #expect(await b.engine.status().errors.isEmpty)
        for device in [restarted, b] { await device.shutdown() }
    }

    /// After 32 splices in a row of a file its whole list goes (so a device whose list
    /// went astray has the journal's again), then splices again.
    @Test func aWholeListGoesAfterThirtyTwoSplices() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        var content = Self.database(1 << 20, seed: 14)
        try await a.write("notes.db", content)
        try await a.sync()
        var kinds: [Bool] = []
        for round in 0..<(RecordSplices.wholeEvery + 2) {
            let page = Array(repeating: UInt8(truncatingIfNeeded: round), count: 4096)
            try await IncrementalUploadTests.write(a, "notes.db", page, at: 512 << 10)
            content.replaceSubrange((512 << 10)..<((512 << 10) + 4096), with: page)
            try await a.sync()
            kinds.append(try await Self.lastUpsert(store).item["splice"] != nil)
        }
        #expect(kinds == Array(repeating: true, count: RecordSplices.wholeEvery) + [false, true])
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.readBytes("notes.db") == content)
        for device in [a, b] { await device.shutdown() }
    }

    /// Format 4 knows no splice: such a container's devices cut coarse and list whole.
    @Test func formatFourCutsCoarseAndListsWhole() async throws {
        let store = InMemoryStore()
        var configuration = SyncConfiguration()
        configuration.newestFormat = 4
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        var content = Self.database(3 << 20, seed: 10)
        try await a.write("notes.db", content)
        try await a.sync()
        try await IncrementalUploadTests.write(a, "notes.db", Array("x".utf8), at: 2 << 20)
        content[2 << 20] = UInt8(ascii: "x")
        try await a.sync()
        let (_, item) = try await Self.lastUpsert(store)
        #expect(item["splice"] == nil && (item["blocks"] as? [Any])?.isEmpty == false)
        #expect(try await Self.blocks(a, "notes.db").first?.length == 256 << 10)
        await a.shutdown()
    }

    /// Splices written by hand after the engine's records: good ones, one whose base is
    /// another list, one in a format-4 record, one beside a list (each refused alone: the
    /// rest of their record goes on, and the file's list is forgotten, so the next splice
    /// is refused too, until a whole list), one whose lengths do not add up (refused as an
    /// item, its list the journal's all the same: the next splice edits it). A fresh
    /// device and the clean-room reader show the same.
    @Test func splicesWrittenByHandAreReadAlike() async throws {
        typealias Hand = HandWrittenRecords
        let root = try TemporaryDirectories.make("ubiqfs-clean-room-splices")
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let a = try await TestDevice(store: store, name: "a", configuration: CleanRoomReaderTests.configuration(encrypted: false, creator: true))
        var content = Self.database(2 << 20, seed: 11)
        try await a.write("db", content)
        try await a.sync()
        let ino = try #require(a.inode("db"))
        let id = try #require(try await a.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID
        var list = try #require(try await a.metadata.read { db in try JournalBlocks.find(id, db) })
        await a.shutdown()

        /// `list` with block `index` replaced by `bytes` inline, as a splice, and the new list.
        func patch(_ index: Int, _ bytes: [UInt8], of list: [BlockReference]) -> (splice: BlockSplice, list: [BlockReference]) {
            var edited = list
            edited[index] = BlockReference(hash: ContentHasher.sha256Hex(bytes), length: Int64(bytes.count), inline: Data(bytes))
            return (BlockSplice.make(from: list, to: edited)!, edited)
        }
        func upsert(_ splice: BlockSplice, size: Int, extra: String = "") throws -> String {
            let json = String(decoding: try RecordCodec.encode(splice), as: UTF8.self)
            return #"{"op":"upsert","item":{"id":"\#(id.rawValue)","parent":"root","name":"db","kind":"file","mode":420,"mtime":1700000000000000000,"size":\#(size),"splice":\#(json)\#(extra)}}"#
        }

        // The content block by block, so a patch replaces one.
        var chunks = list.reduce(into: [[UInt8]]()) { chunks, block in
            let start = chunks.reduce(0) { $0 + $1.count }
            chunks.append(Array(content[start..<(start + Int(block.length))]))
        }
        var journal = try await HandWrittenRecords(store: store)
        let first = patch(3, Array("patched".utf8), of: list)
        chunks[3] = Array("patched".utf8)
        try await journal.append(Hand.record(ops: "[\(try upsert(first.splice, size: chunks.joined().count))]", format: 5))
        list = first.list

        // The whole list again, after each refused splice: a refused splice forgets the
        // file's list, and a whole one sets it again.
        let whole = #"{"op":"upsert","item":{"id":"\#(id.rawValue)","parent":"root","name":"db","kind":"file","mode":420,"mtime":1700000000000000000,"size":\#(chunks.joined().count),"blocks":\#(String(decoding: try RecordCodec.encode(list), as: UTF8.self))}}"#
        let foreign = BlockSplice(of: list.count, base: BlockSplice.digest(of: Array(list.reversed())), runs: first.splice.runs)
        let after = Hand.file(id: ItemID.random().rawValue, parent: "root", name: "after.txt", content: "after")
        try await journal.append(Hand.record(ops: "[\(try upsert(foreign, size: chunks.joined().count)),\(after)]", format: 5))
        let second = patch(10, Array("again".utf8), of: list)
        let secondSize = chunks.joined().count - chunks[10].count + 5
        // Refused: the list was forgotten.
        try await journal.append(Hand.record(ops: "[\(try upsert(second.splice, size: secondSize))]", format: 5))
        try await journal.append(Hand.record(ops: "[\(whole)]", format: 5))
        try await journal.append(Hand.record(ops: "[\(try upsert(second.splice, size: secondSize))]", format: 4))
        try await journal.append(Hand.record(ops: "[\(whole)]", format: 5))
        try await journal.append(Hand.record(ops: "[\(try upsert(second.splice, size: secondSize, extra: #","blocks":[]"#))]", format: 5))
        try await journal.append(Hand.record(ops: "[\(whole)]", format: 5))
        // Refused for its size alone: the list is the journal's all the same, and the
        // next splice is an edit of it.
        try await journal.append(Hand.record(ops: "[\(try upsert(second.splice, size: secondSize + 1))]", format: 5))
        chunks[10] = Array("again".utf8)
        let third = patch(20, Array("third".utf8), of: second.list)
        chunks[20] = Array("third".utf8)
        content = Array(chunks.joined())
        try await journal.append(Hand.record(ops: "[\(try upsert(third.splice, size: content.count))]", format: 5))

        var readOnly = CleanRoomReaderTests.configuration(encrypted: false, creator: false)
        readOnly.readOnly = true
        let device = try await TestDevice(store: store, name: "fresh", configuration: readOnly)
        #expect(try await device.readBytes("db") == content)
        #expect(try await device.read("after.txt") == "after")
        let errors = await device.engine.status().errors
        #expect(errors.filter { $0.contains("splice") }.count == 4, "\(errors)")
        #expect(errors.contains { $0.contains("whose list this device does not have") }, "\(errors)")
        #expect(errors.contains { $0.contains("block lengths do not add up") }, "\(errors)")
        let seen = try await DeviceManifest.of(device)
        let read = try await CleanRoomReaderTests.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        await device.shutdown()
    }
}
