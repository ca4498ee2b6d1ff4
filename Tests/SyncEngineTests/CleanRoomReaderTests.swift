import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import MetadataStore
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// docs/CONTAINER-FORMAT.md is precise enough to write a second client: a reader written
/// from the document alone, in another language and with none of the engine's types
/// (Tests/FormatReader/ubiqfs_reader.py), rebuilds containers the engine made exactly as
/// a fresh device sees them: every item with its metadata and content, every file's
/// versions, the trash. The containers are random (seeded), plain and encrypted, written by
/// two devices that meet in conflicts, then collected, repacked and compacted, then
/// changed again.
///
/// `UBIQFS_READER_SEED=<seed>` replays one container. The control: after a change the
/// fresh device has not pulled, the reader must see a different container, or the
/// comparison could pass anything.
@Suite struct CleanRoomReaderTests {
    static let explicitSeed = ProcessInfo.processInfo.environment["UBIQFS_READER_SEED"].flatMap(UInt64.init)
    static let passphrase = "clean room passphrase"
    static let reader = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FormatReader/ubiqfs_reader.py").path

    static func configuration(encrypted: Bool, creator: Bool) -> SyncConfiguration {
        var configuration = CompactionTests.configuration()
        if encrypted {
            configuration.encryption = ContainerUnlock(passphrase: passphrase, encrypt: creator)
            configuration.encryption.cost = 10
        }
        return configuration
    }

    // A guard against a hang, not a speed claim: a loaded CI machine took more than 5 minutes.
    @Test(.timeLimit(.minutes(20)), arguments: explicitSeed.map { [$0] } ?? [1, 2], [false, true])
    func aReaderWrittenFromTheDocumentSeesWhatAFreshDeviceSees(seed: UInt64, encrypted: Bool) async throws {
        let root = try TemporaryDirectories.make("ubiqfs-clean-room")
        let store = UnwatchedStore(base: try LocalFolderStore(root: root + "/store", container: "c"))
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypted: encrypted, creator: true))
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration(encrypted: encrypted, creator: false))
        let repack = try await Self.repackMostlyGarbage(a)
        #expect((repack.repacked ?? 0) > 0 && repack.deleted > 0, "a run that repacks and deletes: \(repack)")
        var workload = ReaderWorkload(seed: seed)
        for _ in 0..<40 { try await workload.step(workload.rng.chance(50) ? a : b) }
        for device in [a, b, a] { try await device.sync() }
        _ = try await a.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        let compaction = try await a.engine.collect(grace: CollectionTests.shortGrace, horizon: .zero)
        #expect(compaction.compactedThrough != nil, "a run that compacts: \(compaction)")
        for _ in 0..<12 { try await workload.step(workload.rng.chance(50) ? a : b) }
        // A database written in place on both devices: its records are splices.
        try await a.write("notes.db", FileCuttings.sqliteHeader + ChunkPackingTests.random(600_000, seed: seed))
        try await a.sync()
        try await b.sync()
        for (device, offset) in [(a, 4096), (b, 300_000), (a, 8192)] {
            // Here before it is written, as an open for writing fetches it.
            _ = try await device.readBytes("notes.db")
            #expect(try await device.waitUntilLocal("notes.db"))
            try await IncrementalUploadTests.write(device, "notes.db", ChunkPackingTests.random(4096, seed: UInt64(offset)), at: offset)
            try await device.sync()
            for other in [a, b] { try await other.sync() }
        }
        try await Self.leaveHistory(b)
        for device in [a, b, a] { try await device.sync() }

        let fresh = try await TestDevice(store: store, name: "fresh", configuration: Self.configuration(encrypted: encrypted, creator: false))
        let seen = try await DeviceManifest.of(fresh)
        #expect(try await DeviceManifest.of(a).items == seen.items, "the writer and a fresh device agree")
        let read = try await Self.read(root + "/store/c", encrypted: encrypted, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        #expect(seen.items.count > 5 && seen.versions.count >= 3 && seen.trash.contains { $0.contains(#""items":3,"path":["gone"]"#) })
        #expect(seen.items.contains { $0.contains(#""names":2"#) }, "a file with two names")
        if !encrypted {
            // The records the reader expanded: files edited in place go as splices.
            let journal = root + "/store/c/journal"
            let spliced = try FileManager.default.contentsOfDirectory(atPath: journal).filter { name in
                (try? String(contentsOfFile: journal + "/" + name, encoding: .utf8))?.contains(#""splice":"#) == true
            }
            #expect(!spliced.isEmpty, "a record with a splice")
        }

        // The control: a change the fresh device has not pulled is one the reader sees.
        try await a.write("control.txt", "after")
        try await a.sync()
        #expect(try await Self.read(root + "/store/c", encrypted: encrypted, in: root) != seen)
        try await fresh.sync()
        let after = try await Self.read(root + "/store/c", encrypted: encrypted, in: root)
        let pulled = try await DeviceManifest.of(fresh)
        #expect(after == pulled, "\(after.difference(from: pulled))")
        for device in [a, b, fresh] { await device.shutdown() }
    }

    /// Records no careful writer makes, written by hand after the engine's: names taken
    /// across and within a record, refused operations, a record that does not decode and
    /// one whose settings lack a field (both skipped, both still chained), a name given
    /// twice, xattr names that are one in NFC, setuid bits. A fresh (read-only) device and
    /// the reader apply the document's rules alike, and the rules say what they show.
    @Test func recordsNoCarefulWriterMakesAreReadAlike() async throws {
        let (root, store, docs, fileA, fileB) = try await Self.smallContainer("ubiqfs-clean-room-hand")
        func fresh() -> String { ItemID.random().rawValue }
        typealias Hand = HandWrittenRecords
        var journal = try await HandWrittenRecords(store: store)
        try await journal.append(Hand.record(ops: "[\(Hand.file(id: fresh(), parent: "root", name: "b.txt", content: "new b"))]"))
        try await journal.append(#""format":2,"device":"hand","deviceName":"hand","commit":"c","ops":[]"#)
        let xattrs = #","xattrs":{"user.caf\u00e9":"AQ==","user.cafe\u0301":"Ag==","security.x":"Aw==","user.ubiqfs.pinned":"MQ=="}"#
        let ops = [
            Hand.file(id: fresh(), parent: docs, name: "a.txt", content: "y"),
            Hand.file(id: fileA, parent: docs, name: "moved.txt", content: "a"),
            Hand.file(id: "xyz", parent: "root", name: "malformed.txt", content: "x"),
            Hand.file(id: fresh(), parent: fresh(), name: "orphan.txt", content: "x"),
            #"{"op":"delete","id":"\#(fresh())"}"#,
            Hand.file(id: fresh(), parent: "root", name: #"first.txt","name":"second.txt"#, content: "twice", mode: 0o6755, extra: xattrs),
            Hand.file(id: fresh(), parent: "root", name: "nfd.txt", content: "nfd", extra: #","xattrs":{"user.cafe\u0301":"Ag==","user.caf\u00e9":"AQ=="}"#),
            #"{"op":"upsert","item":{"id":"\#(fileB)","parent":"root","name":"b (2).txt","kind":"directory","mode":493,"mtime":1,"size":0}}"#,
            #"{"op":"upsert","item":{"id":"\#(fresh())","parent":"root","name":"wide","kind":"characterDevice","mode":420,"mtime":1,"size":0,"rdev":1099511627776}}"#,
            // A reference of length 0 names no bytes: its pack is never asked for.
            #"{"op":"upsert","item":{"id":"\#(fresh())","parent":"root","name":"zero.txt","kind":"file","mode":420,"mtime":1,"size":0,"blocks":[{"h":"\#(String(repeating: "0", count: 64))","n":0,"p":"\#(fresh())","o":0}]}}"#,
        ]
        try await journal.append(Hand.record(ops: "[\(ops.joined(separator: ","))]"))
        let lost = Hand.file(id: fresh(), parent: "root", name: "lost.txt", content: "lost")
        try await journal.append(Hand.record(ops: "[\(lost)]", extra: #","settings":{"retention":{"versions":5}}"#))
        try await journal.append(Hand.record(ops: "[\(Hand.file(id: fresh(), parent: "root", name: "after.txt", content: "after"))]"))

        var readOnly = Self.configuration(encrypted: false, creator: false)
        readOnly.readOnly = true
        let device = try await TestDevice(store: store, name: "fresh", configuration: readOnly)
        let tree = try await device.tree()
        #expect(tree == [
            "b.txt": "new b", "b (2).txt": "b", "docs": "/", "docs/a.txt": "y", "docs/moved.txt": "a",
            "first.txt": "twice", "nfd.txt": "nfd", "after.txt": "after", "wide": "characterDevice 1099511627776", "zero.txt": "",
        ])
        let first = try #require(device.inode("first.txt"))
        #expect(try device.core.attributes(first).permissions & 0o7777 == 0o755)
        #expect(try device.core.listXattrs(first) == Array("user.caf\u{e9}".utf8) + [0])
        #expect(try device.core.getXattr(first, name: Array("user.caf\u{e9}".utf8)) == [1])
        let nfd = try #require(device.inode("nfd.txt"))
        #expect(try device.core.listXattrs(nfd) == Array("user.caf\u{e9}".utf8) + [0])
        #expect(try device.core.getXattr(nfd, name: Array("user.caf\u{e9}".utf8)) == [2])
        // The checker tells spellings apart that Swift's String equality would not.
        #expect(DeviceManifest.Lines(items: ["caf\u{e9}"], versions: [], trash: []) != DeviceManifest.Lines(items: ["cafe\u{301}"], versions: [], trash: []))
        let seen = try await DeviceManifest.of(device)
        let read = try await Self.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        await device.shutdown()
    }

    /// Links (format 3) written by hand: good ones, ones the rules refuse (an item that is
    /// not here, a folder, a link, another item than before), a delete of an item that
    /// takes its links with it, and thumbnails kept or dropped. The device and the reader
    /// agree, and show what the rules say.
    @Test func linksWrittenByHandAreReadAlike() async throws {
        let (root, store, docs, fileA, fileB) = try await Self.smallContainer("ubiqfs-clean-room-links")
        func fresh() -> String { ItemID.random().rawValue }
        typealias Hand = HandWrittenRecords
        var journal = try await HandWrittenRecords(store: store)
        let (good, moved, doomed, picture) = (fresh(), fresh(), fresh(), fresh())
        let png = Array("not really a png".utf8)
        let thumbnail = #"{"size":256,"blocks":[{"h":"\#(ContentHasher.sha256Hex(png))","n":\#(png.count),"d":"\#(Data(png).base64EncodedString())"}]}"#
        let ops = [
            Hand.link(id: good, parent: "root", name: "a-link.txt", of: fileA),
            Hand.link(id: moved, parent: docs, name: "b-link.txt", of: fileB),
            Hand.link(id: fresh(), parent: "root", name: "nothing.txt", of: fresh()),
            Hand.link(id: fresh(), parent: "root", name: "folder-link", of: docs),
            Hand.link(id: fresh(), parent: "root", name: "link-link.txt", of: good),
            Hand.link(id: fresh(), parent: "root", name: "self.txt", of: "root"),
            Hand.file(id: picture, parent: "root", name: "photo.jpg", content: "photo", extra: #","thumbnails":[\#(thumbnail),{"size":100,"blocks":[]},\#(thumbnail)]"#),
            Hand.file(id: doomed, parent: docs, name: "doomed.txt", content: "doomed"),
            Hand.link(id: fresh(), parent: "root", name: "doomed-link.txt", of: doomed),
        ]
        try await journal.append(Hand.record(ops: "[\(ops.joined(separator: ","))]", format: 3))
        let later = [
            // Another item than before, a name taken by a link, and an item deleted with its names.
            Hand.link(id: good, parent: "root", name: "a-link.txt", of: fileB),
            Hand.file(id: fresh(), parent: "root", name: "a-link.txt", content: "takes the name"),
            #"{"op":"delete","id":"\#(doomed)"}"#,
            #"{"op":"upsert","item":{"id":"\#(moved)","parent":"root","name":"b-moved.txt","kind":"link","mode":0,"mtime":0,"size":0,"of":"\#(fileB)"}}"#,
        ]
        try await journal.append(Hand.record(ops: "[\(later.joined(separator: ","))]", format: 3))
        // A thumbnail without its blocks, and a link whose `of` is a number: neither record decodes.
        let noBlocks = Hand.file(id: fresh(), parent: "root", name: "skipped.jpg", content: "x", extra: #","thumbnails":[{"size":256}]"#)
        try await journal.append(Hand.record(ops: "[\(noBlocks)]", format: 3))
        let numeric = #"{"op":"upsert","item":{"id":"\#(fresh())","parent":"root","name":"skipped-link","kind":"link","mode":0,"mtime":0,"size":0,"of":7}}"#
        try await journal.append(Hand.record(ops: "[\(numeric)]", format: 3))

        var readOnly = Self.configuration(encrypted: false, creator: false)
        readOnly.readOnly = true
        let device = try await TestDevice(store: store, name: "fresh", configuration: readOnly)
        #expect(try await device.tree() == [
            "docs": "/", "docs/a.txt": "a", "b.txt": "b", "a-link.txt": "takes the name", "a-link (2).txt": "a",
            "b-moved.txt": "b", "photo.jpg": "photo",
        ])
        #expect(device.inode("a-link (2).txt") == device.inode("docs/a.txt"))
        #expect(try device.core.attributes(try #require(device.inode("b.txt"))).nlink == 2)
        let photo = try #require(try await device.metadata.read { db in try BaseSnapshots.find(ItemID(picture), db) })
        #expect(photo.thumbnails?.map(\.size) == [256])
        let seen = try await DeviceManifest.of(device)
        let read = try await Self.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        await device.shutdown()
    }

    /// A checkpoint (with its history object) holding two items of one name in one folder:
    /// joining, a fresh device applies its items in their order, by id, so the one with the
    /// greater id keeps the name and the other steps aside; the reader does the same.
    @Test func aCheckpointWithTwoItemsOfOneNameIsReadAlike() async throws {
        let root = try TemporaryDirectories.make("ubiqfs-clean-room-checkpoint")
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypted: false, creator: true))
        try await a.write("seed.txt", "seed")
        try await a.sync()
        await a.shutdown()
        let head = try await HandWrittenRecords(store: store).seq
        let (lower, higher) = ("1" + String(repeating: "0", count: 31), "f" + String(repeating: "0", count: 31))
        func item(_ id: String, _ content: String) -> String {
            let upsert = HandWrittenRecords.file(id: id, parent: "root", name: "same.txt", content: content)
            return String(upsert.dropFirst(#"{"op":"upsert","item":"#.count).dropLast())
        }
        let checkpoint = #"{"format":2,"items":[\#(item(lower, "lower id")),\#(item(higher, "higher id"))],"seq":\#(head)}"#
        try await store.put(ContainerLayout.checkpointKey(head), Array(checkpoint.utf8))
        let history = #"{"first":1,"format":2,"last":\#(head),"trash":[],"versions":[]}"#
        try await store.put(ContainerLayout.historyKey(first: 1, last: head), Array(history.utf8))

        var readOnly = Self.configuration(encrypted: false, creator: false)
        readOnly.readOnly = true
        let device = try await TestDevice(store: store, name: "fresh", configuration: readOnly)
        #expect(try await device.tree() == ["same.txt": "higher id", "same (2).txt": "lower id"])
        let seen = try await DeviceManifest.of(device)
        let read = try await Self.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        await device.shutdown()
    }

    /// Small files in one pack, most of them deleted with history kept for no time (so
    /// they are garbage), collected: the pack is repacked (`relocate`). Then the default
    /// retention again: settings records on both sides. One name that is not UTF-8 beside.
    static func repackMostlyGarbage(_ device: TestDevice) async throws -> CollectionReport {
        try device.mkdir("packed")
        for index in 0..<24 { try await device.write("packed/p\(index).bin", CollectionTests.content(UInt64(index), size: 2000 + index * 1500)) }
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]
        let (_, handle) = try device.core.create(parent: Inode.root, name: latin1, mode: 0o640, flags: O_WRONLY, caller: TestDevice.caller)
        _ = try Array("Latin-1".utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
        device.core.release(handle: handle)
        try await device.sync()
        _ = try await device.engine.setRetention(versions: 0, trash: 0)
        for index in 0..<20 { try device.remove("packed/p\(index).bin") }
        try await device.sync()
        let report = try await device.engine.collect(grace: CollectionTests.shortGrace, horizon: .seconds(3600))
        let standard = ContainerSettings.Retention.standard
        _ = try await device.engine.setRetention(versions: standard.versions, trash: standard.trash)
        try await device.sync()
        return report
    }

    /// Versions of a file and a folder in the trash with what it held, whatever the seed did.
    static func leaveHistory(_ device: TestDevice) async throws {
        for round in 0..<3 {
            try await device.write("history.txt", String(repeating: "round \(round) ", count: 200 * (round + 1)))
            try await device.sync()
        }
        try device.link("history.txt", "history-link.txt")
        try device.mkdir("gone")
        try await device.write("gone/inside.txt", "held by a deleted folder")
        try device.link("gone/inside.txt", "gone/inside-link.txt")
        try await device.sync()
        try device.remove("gone/inside-link.txt")
        try device.remove("gone/inside.txt")
        try device.remove("gone")
        try await device.sync()
    }

    /// A plain container made by an engine, for records written by hand after its own:
    /// `docs/a.txt` and `b.txt`, with the ids of `docs`, `docs/a.txt` and `b.txt`.
    static func smallContainer(_ name: String) async throws -> (root: String, store: LocalFolderStore, docs: String, fileA: String, fileB: String) {
        let root = try TemporaryDirectories.make(name)
        let store = try LocalFolderStore(root: root + "/store", container: "c")
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypted: false, creator: true))
        try a.mkdir("docs")
        try await a.write("docs/a.txt", "a")
        try await a.write("b.txt", "b")
        try await a.sync()
        var ids: [String] = []
        for path in ["docs", "docs/a.txt", "b.txt"] {
            let ino = try #require(a.inode(path))
            ids.append(try #require(try await a.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID.rawValue)
        }
        await a.shutdown()
        return (root, store, ids[0], ids[1], ids[2])
    }

    /// The clean-room reader's view of the container folder `container`.
    static func read(_ container: String, encrypted: Bool, in root: String) async throws -> DeviceManifest.Lines {
        var arguments = [reader, container]
        if encrypted {
            let file = root + "/passphrase"
            try Data((passphrase + "\n").utf8).write(to: URL(fileURLWithPath: file))
            arguments += ["--passphrase-file", file]
        }
        let output = root + "/reader.json"
        let errors = root + "/reader.err"
        let command = arguments
        let status = try await offThread { () throws -> Int32 in
            guard FileManager.default.createFile(atPath: output, contents: nil), FileManager.default.createFile(atPath: errors, contents: nil) else {
                throw DeviceManifest.ManifestError("cannot create \(output)")
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = command
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        guard status == 0 else {
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw DeviceManifest.ManifestError("the reader failed (\(status)): \(message)")
        }
        return try DeviceManifest.parse(readerOutput: try Data(contentsOf: URL(fileURLWithPath: output)))
    }
}
