import Foundation
import Testing
@testable import ItemModel

@Suite struct ByteStringTests {
    @Test func utf8NamesEncodeAsPlainStrings() throws {
        let name = ByteString("notes 📝.txt")
        let json = String(decoding: try RecordCodec.encode(name), as: UTF8.self)
        #expect(json == "\"notes 📝.txt\"")
        #expect(try RecordCodec.decode(ByteString.self, from: Array(json.utf8)) == name)
    }

    @Test func invalidUTF8RoundTripsExactly() throws {
        let name = ByteString([0x66, 0xff, 0xfe, 0x0a, 0x41])
        let bytes = try RecordCodec.encode(name)
        #expect(String(decoding: bytes, as: UTF8.self).contains("base64"))
        #expect(try RecordCodec.decode(ByteString.self, from: bytes) == name)
    }
}

@Suite struct ItemNameTests {
    @Test(arguments: [
        ("a", true), ("", false), (".", false), ("..", false), ("a/b", false), ("...", true),
        (String(repeating: "x", count: 255), true), (String(repeating: "x", count: 256), false),
    ])
    func validity(name: String, valid: Bool) {
        #expect(ItemName.isValid(ByteString(name)) == valid)
    }

    @Test func nulIsNeverValid() {
        #expect(!ItemName.isValid(ByteString([0x61, 0x00])))
    }

    @Test func conflictCopyKeepsTheExtensionLast() {
        let copy = ItemName.conflictCopy(of: ByteString("report.txt"), device: "laptop", date: "2026-11-22 101500")
        #expect(copy.string == "report (conflict from laptop 2026-11-22 101500).txt")
        let dotfile = ItemName.conflictCopy(of: ByteString(".bashrc"), device: "d", date: "x")
        #expect(dotfile.string == ".bashrc (conflict from d x)")
    }

    @Test func decoratedNamesStayWithin255Bytes() {
        let long = ByteString(String(repeating: "é", count: 120) + ".md")
        let copy = ItemName.conflictCopy(of: long, device: "device", date: "2026-11-22 101500")
        #expect(copy.bytes.count <= 255)
        #expect(copy.bytes.suffix(3) == Array(".md".utf8))
        #expect(ItemName.numbered(ByteString("a.tar"), 2).string == "a (2).tar")
        #expect(ItemName.isConflictCopy(copy, of: long))
    }

    @Test func conflictCopiesAreRecognisedByTheirOriginalOnly() {
        let name = ByteString("report.txt")
        let copy = ItemName.conflictCopy(of: name, device: "laptop", date: "2026-11-22 101500")
        #expect(ItemName.isConflictCopy(copy, of: name))
        #expect(ItemName.isConflictCopy(ItemName.numbered(copy, 2), of: name))
        #expect(!ItemName.isConflictCopy(copy, of: ByteString("report.md")))
        #expect(!ItemName.isConflictCopy(copy, of: ByteString("rep.txt")))
        #expect(!ItemName.isConflictCopy(ItemName.numbered(name, 2), of: name))
        #expect(!ItemName.isConflictCopy(name, of: name))
        let dotfile = ByteString(".bashrc")
        #expect(ItemName.isConflictCopy(ItemName.conflictCopy(of: dotfile, device: "d", date: "x"), of: dotfile))
    }
}

@Suite struct LayoutTests {
    @Test func journalKeysSortNumerically() {
        #expect(ContainerLayout.journalKey(7) == "journal/00000000000000000007")
        #expect(ContainerLayout.journalKey(10) > ContainerLayout.journalKey(9))
        #expect(ContainerLayout.sequence(ofKey: ContainerLayout.journalKey(123), prefix: ContainerLayout.journalPrefix) == 123)
        #expect(ContainerLayout.sequence(ofKey: "journal/12", prefix: ContainerLayout.journalPrefix) == nil)
        #expect(ContainerLayout.sequence(ofKey: "journal/0000000000000000001x", prefix: ContainerLayout.journalPrefix) == nil)
    }
}

@Suite struct RecordTests {
    static let hash = String(repeating: "ab", count: 32)

    static func file(name: String = "a.txt", mode: UInt32 = 0o644, size: Int64 = 3, blocks: [BlockReference]? = nil) -> ItemSnapshot {
        ItemSnapshot(
            id: .random(), parent: .root, name: ByteString(name), kind: .file, mode: mode, mtime: 1,
            size: size, blocks: blocks ?? [BlockReference(hash: hash, length: size)]
        )
    }

    @Test func recordsRoundTrip() throws {
        var item = Self.file()
        item.xattrs = ["user.color": Data([1, 2, 3])]
        let record = JournalRecord(device: "d", deviceName: "laptop", commit: "c", time: 5, ops: [.upsert(item), .delete(.random())])
        let decoded = try RecordCodec.decode(JournalRecord.self, from: try RecordCodec.encode(record))
        #expect(decoded == record)
    }

    @Test func unknownOperationsAreMalformed() {
        let json = #"{"format":1,"device":"d","deviceName":"n","commit":"c","time":0,"ops":[{"op":"explode","id":"root"}]}"#
        #expect(throws: RecordError.self) { try RecordCodec.decode(JournalRecord.self, from: Array(json.utf8)) }
    }

    @Test func unknownFormatsAreRefused() throws {
        var record = JournalRecord(device: "d", deviceName: "n", commit: "c", time: 0, ops: [])
        record.format = 99
        #expect(throws: RecordError.self) { try RecordValidator.validate(record) }
    }

    @Test func setuidAndSetgidAreStripped() throws {
        let item = try RecordValidator.sanitized(Self.file(mode: 0o6755))
        #expect(item.mode == 0o755)
    }

    @Test(arguments: ["", ".", "..", "a/b", String(repeating: "n", count: 256)])
    func forbiddenNamesAreRefused(name: String) {
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(Self.file(name: name)) }
    }

    @Test func sizesMustMatchBlocks() {
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(Self.file(size: 10, blocks: [BlockReference(hash: Self.hash, length: 3)])) }
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(Self.file(size: -1, blocks: [])) }
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(Self.file(blocks: [BlockReference(hash: "../../etc", length: 3)])) }
    }

    @Test func malformedIdsAndSymlinksAreRefused() {
        var item = Self.file()
        item.id = ItemID("../x")
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(item) }
        var link = Self.file()
        link.kind = .symlink
        link.target = nil
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(link) }
    }

    @Test func systemNamespacesAreDroppedFromXattrs() throws {
        var item = Self.file()
        item.xattrs = ["user.ok": Data([1]), "security.capability": Data([2]), "trusted.x": Data([3]), "user.ubiqfs.state": Data([4])]
        #expect(try RecordValidator.sanitized(item).xattrs?.keys.sorted() == ["user.ok"])
    }

    @Test func xattrNamesFromTheStoreAreKeptInNFC() throws {
        var item = Self.file()
        item.xattrs = ["user.cafe\u{301}": Data([1]), "user.plain": Data([2])]
        // Compared as bytes: Swift's String equality would call the two spellings equal.
        let kept = try #require(try RecordValidator.sanitized(item).xattrs)
        #expect(Set(kept.keys.map { Array($0.utf8) }) == [Array("user.caf\u{e9}".utf8), Array("user.plain".utf8)])
        #expect(Array(ItemSnapshot.xattrName("user.cafe\u{301}").utf8) == Array("user.caf\u{e9}".utf8))
    }

    @Test func oversizedXattrsFromTheStoreAreCutToTheLocalLimits() throws {
        var item = Self.file()
        let full = Data(repeating: 7, count: ItemSnapshot.maxXattrValue)
        // Five 64 KiB values (over the 256 KiB total) and one value over the per-value limit.
        item.xattrs = Dictionary(uniqueKeysWithValues: (0..<5).map { ("user.v\($0)", full) })
        item.xattrs?["user.huge"] = Data(count: ItemSnapshot.maxXattrValue + 1)
        let kept = try #require(try RecordValidator.sanitized(item).xattrs)
        #expect(kept.keys.sorted() == ["user.v0", "user.v1", "user.v2"])
        #expect(kept.values.allSatisfy { $0 == full })
        #expect(kept.reduce(0) { $0 + $1.key.utf8.count + $1.value.count } <= ItemSnapshot.maxXattrTotal)
    }

    @Test func checkpointsAreDeterministic() throws {
        let items = (0..<20).map { Self.file(name: "f\($0)") }
        let one = try RecordCodec.encode(Checkpoint(seq: 9, items: items))
        let two = try RecordCodec.encode(Checkpoint(seq: 9, items: items.reversed()))
        #expect(one == two)
    }
}
