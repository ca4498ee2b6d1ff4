import ContainerStore
import ContentCache
import Foundation
import ItemModel
import MetadataStore
import SyncEngine
import Testing
import DeviceFixture

/// Format 4's merges written by hand (docs/CONTAINER-FORMAT.md, "Merges"): a device and
/// the clean-room reader list the same versions, the inputs among them, and drop the
/// merges the rules refuse.
@Suite struct MergeRecordReadTests {
    typealias Hand = HandWrittenRecords

    static func inline(_ content: String) -> String {
        let bytes = Array(content.utf8)
        return #"[{"h":"\#(ContentHasher.sha256Hex(bytes))","n":\#(bytes.count),"d":"\#(Data(bytes).base64EncodedString())"}]"#
    }

    static func merge(_ id: String, base: UInt64, with: UInt64, inputs: [String]) -> String {
        let listed = inputs.map { #"{"device":"laptop","time":1800000000000000000,"size":\#($0.utf8.count),"mtime":1790000000000000000,"blocks":\#(inline($0))}"# }
        return #"{"id":"\#(id)","base":\#(base),"with":\#(with),"kind":"text","inputs":[\#(listed.joined(separator: ","))]}"#
    }

    @Test func mergesWrittenByHandAreReadAlike() async throws {
        let (root, store, _, fileA, fileB) = try await CleanRoomReaderTests.smallContainer("ubiqfs-clean-room-merges")
        var journal = try await HandWrittenRecords(store: store)
        let shared = journal.seq
        try await journal.append(Hand.record(ops: "[\(Hand.file(id: fileB, parent: "root", name: "b.txt", content: "b from desk\n"))]", format: 4))
        let desk = journal.seq
        let merged = desk + 1
        let merges = [
            Self.merge(fileB, base: shared, with: desk, inputs: ["b from laptop\n", "b from laptop, later\n"]),
            // Refused: `with` is the record itself; a file the record does not upsert; a second merge of b.txt.
            Self.merge(fileB, base: shared, with: merged, inputs: ["x"]),
            Self.merge(fileA, base: shared, with: desk, inputs: ["y"]),
            Self.merge(fileB, base: shared, with: desk, inputs: ["z"]),
        ]
        let upsert = Hand.file(id: fileB, parent: "root", name: "b.txt", content: "b from desk\nb from laptop, later\n")
        try await journal.append(Hand.record(ops: "[\(upsert)]", extra: #","merges":[\#(merges.joined(separator: ","))]"#, format: 4))
        // A format-3 record's merges are ignored.
        let three = Hand.file(id: fileB, parent: "root", name: "b.txt", content: "format three\n")
        try await journal.append(Hand.record(ops: "[\(three)]", extra: #","merges":[\#(Self.merge(fileB, base: shared, with: merged, inputs: ["w"]))]"#, format: 3))
        // A merge field of another type: the record does not decode (and is skipped).
        let bad = Hand.file(id: fileA, parent: "root", name: "skipped.txt", content: "s")
        try await journal.append(Hand.record(ops: "[\(bad)]", extra: #","merges":[{"id":"\#(fileA)","base":"1","with":2,"kind":"text","inputs":[]}]"#, format: 4))

        let device = try await TestDevice(store: store, name: "fresh", configuration: CleanRoomReaderTests.configuration(encrypted: false, creator: false))
        let ino = try #require(device.inode("b.txt"))
        let versions = try device.core.versions(ino).versions
        #expect(versions.map(\.name) == ["\(merged + 1)", "\(merged)", "\(merged).1", "\(merged).2", "\(desk)", "\(shared)"])
        #expect(versions[1].mergedWith == desk && versions[1].mergeKind == "text" && versions[2].device == "laptop")
        #expect(try await device.tree()["skipped.txt"] == nil)
        let status = await device.engine.status()
        #expect(status.errors.contains { $0.contains("merge of \(fileB)") && $0.contains("base") }, "\(status.errors)")
        #expect(status.errors.contains { $0.contains("the record commits no such file") })
        #expect(status.errors.contains { $0.contains("a second merge") })
        #expect(status.errors.contains { $0.contains("merges in a format-3 record ignored") })

        let seen = try await DeviceManifest.of(device)
        let read = try await CleanRoomReaderTests.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        #expect(seen.versions.contains { $0.contains(#""input":2"#) })

        // An input comes back as any version does.
        try await device.core.restore(ino, version: merged, input: 1)
        #expect(try await device.read("b.txt") == "b from laptop\n")
        await device.shutdown()
    }

    /// Compacted away, the merge's record leaves its inputs in the history object: a
    /// device that joins from the checkpoint lists them, as the reader does.
    @Test func inputsOutliveTheirRecordInTheHistory() async throws {
        let (root, store, _, _, fileB) = try await CleanRoomReaderTests.smallContainer("ubiqfs-clean-room-merges-compacted")
        var journal = try await HandWrittenRecords(store: store)
        let shared = journal.seq
        try await journal.append(Hand.record(ops: "[\(Hand.file(id: fileB, parent: "root", name: "b.txt", content: "b from desk\n"))]", format: 4))
        let upsert = Hand.file(id: fileB, parent: "root", name: "b.txt", content: "b merged\n")
        let note = Self.merge(fileB, base: shared, with: journal.seq, inputs: ["b from laptop\n"])
        try await journal.append(Hand.record(ops: "[\(upsert)]", extra: #","merges":[\#(note)]"#, format: 4))
        let merged = journal.seq

        let compactor = try await TestDevice(store: store, name: "compactor", configuration: CompactionTests.configuration())
        let report = try await CompactionTests.compact(compactor)
        #expect(report.compactedThrough == merged)
        await compactor.shutdown()
        let joiner = try await TestDevice(store: store, name: "joiner", configuration: CleanRoomReaderTests.configuration(encrypted: false, creator: false))
        let versions = try joiner.core.versions(try #require(joiner.inode("b.txt"))).versions
        #expect(versions.map(\.name) == ["\(merged)", "\(merged).1", "\(merged - 1)", "\(shared)"])
        #expect(versions[0].mergedWith == merged - 1 && versions[1].size == 14)
        let seen = try await DeviceManifest.of(joiner)
        let read = try await CleanRoomReaderTests.read(root + "/store/c", encrypted: false, in: root)
        #expect(read == seen, "\(read.difference(from: seen))")
        #expect(seen.versions.contains { $0.contains(#""input":1"#) })
        await joiner.shutdown()
    }
}
