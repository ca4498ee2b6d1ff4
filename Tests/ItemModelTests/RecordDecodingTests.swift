import Foundation
import Testing

@testable import ItemModel

/// The JSON rules CONTAINER-FORMAT.md states for every record ("journal/<seq>"): which
/// fields are required, what an int is, which of two equal names counts. A second client
/// follows the document, so each rule is checked on the bytes, not on our own encoder.
@Suite struct RecordDecodingTests {
    static let id = "0123456789abcdef0123456789abcdef"
    static let hash = String(repeating: "ab", count: 32)

    static func record(_ fields: String, item: String = "") -> String {
        let ops = item.isEmpty ? "[]" : #"[{"op":"upsert","item":{\#(item)}}]"#
        return #"{"format":1,"device":"d","deviceName":"n","commit":"c","time":0,"ops":\#(ops)\#(fields)}"#
    }

    static func file(_ extra: String = "", blocks: String = #"[{"h":"\#(hash)","n":3}]"#) -> String {
        #""id":"\#(id)","parent":"root","name":"a","kind":"file","mode":420,"mtime":1,"size":3,"blocks":\#(blocks)\#(extra)"#
    }

    static func decode(_ json: String) throws -> JournalRecord {
        try RecordCodec.decode(JournalRecord.self, from: Array(json.utf8))
    }

    @Test func everyRequiredFieldIsRequired() throws {
        let whole = #"{"format":1,"device":"d","deviceName":"n","commit":"c","time":0,"ops":[]}"#
        _ = try Self.decode(whole)
        for field in ["format", "device", "deviceName", "commit", "time", "ops"] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(whole.utf8)) as? [String: Any])
            let without = try JSONSerialization.data(withJSONObject: object.filter { $0.key != field })
            #expect(throws: RecordError.self, "without \(field)") { try RecordCodec.decode(JournalRecord.self, from: Array(without)) }
        }
        for field in ["id", "parent", "name", "kind", "mode", "mtime", "size"] {
            let item = Self.file().replacingOccurrences(of: #""\#(field)":"#, with: #""x\#(field)":"#)
            #expect(throws: RecordError.self, "an item without \(field)") { try Self.decode(Self.record("", item: item)) }
        }
        // null is absent for an optional field; unknown fields are ignored.
        let loose = try Self.decode(Self.record(#","settings":null,"batch":null,"future":{"x":1}"#))
        #expect(loose.settings == nil && loose.batch == nil)
    }

    @Test func anIntIsAnIntegralNumberInItsRange() throws {
        #expect(try Self.decode(#"{"format":1.0,"device":"d","deviceName":"n","commit":"c","time":1e3,"ops":[]}"#).time == 1000)
        for bad in [#""time":1.5"#, #""time":"1""#, #""time":9223372036854775808"#] {
            let json = #"{"format":1,"device":"d","deviceName":"n","commit":"c","ops":[],\#(bad)}"#
            #expect(throws: RecordError.self, "\(bad)") { try Self.decode(json) }
        }
        #expect(throws: RecordError.self) { try Self.decode(Self.record(#","compacted":-1"#)) }
        #expect(throws: RecordError.self) { try Self.decode(Self.record("", item: Self.file().replacingOccurrences(of: "420", with: "-1"))) }
    }

    @Test func ofTwoEqualNamesTheFirstCounts() throws {
        let record = try Self.decode(#"{"format":1,"device":"d","deviceName":"first","deviceName":"second","commit":"c","time":0,"ops":[]}"#)
        #expect(record.deviceName == "first")
        // xattr names that are the same in NFC are one name, with the first value.
        for (first, second) in [("user.caf\\u00e9", "user.cafe\\u0301"), ("user.cafe\\u0301", "user.caf\\u00e9")] {
            let item = Self.file(#","xattrs":{"\#(first)":"AQ==","\#(second)":"Ag=="}"#)
            let operation = try #require(try Self.decode(Self.record("", item: item)).ops.first)
            guard case .upsert(let decoded) = operation else {
                Issue.record("not an upsert: \(operation)")
                continue
            }
            let kept = try #require(try RecordValidator.sanitized(decoded).xattrs)
            #expect(kept.count == 1 && kept.values.first == Data([1]))
            #expect(kept.keys.map { Array($0.utf8) } == [Array("user.caf\u{e9}".utf8)])
        }
    }

    @Test func settingsCarryBothRetentionFieldsOrTheRecordIsSkipped() throws {
        let both = try Self.decode(Self.record(#","settings":{"retention":{"versions":60,"trash":120}}"#))
        #expect(both.settings == ContainerSettings(retention: .init(versions: 60, trash: 120)))
        for partial in [#"{"retention":{"versions":60}}"#, #"{"retention":{"trash":60}}"#, #"{}"#] {
            #expect(throws: RecordError.self, "\(partial)") { try Self.decode(Self.record(#","settings":\#(partial)"#)) }
        }
    }

    @Test func blockReferencesHaveOneWholePlace() throws {
        func reference(_ json: String) throws -> BlockReference {
            try JSONDecoder().decode(BlockReference.self, from: Data(json.utf8))
        }
        let pack = String(repeating: "c", count: 32)
        let wellFormed = [
            #"{"h":"\#(Self.hash)","n":3}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)","o":0}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)","o":8,"s":47}"#,
            #"{"h":"\#(Self.hash)","n":3,"d":"YWJj"}"#,
        ]
        let malformed = [
            #"{"h":"\#(Self.hash)","n":3,"s":3}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)"}"#,
            #"{"h":"\#(Self.hash)","n":3,"o":0}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)","o":-1}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)","o":0,"s":-1}"#,
            #"{"h":"\#(Self.hash)","n":3,"p":"\#(pack)","o":0,"d":"YWJj"}"#,
            #"{"h":"\#(Self.hash)","n":3,"d":"YWJj","s":3}"#,
            #"{"h":"\#(Self.hash)","n":2,"d":"YWJj"}"#,
            #"{"h":"\#(Self.hash.uppercased())","n":3}"#,
        ]
        for json in wellFormed { #expect(try reference(json).isWellFormed, "\(json)") }
        for json in malformed { #expect(try !reference(json).isWellFormed, "\(json)") }
        // Inline bytes of more than 1 KiB, counted decoded.
        let big = Data(count: 1025).base64EncodedString()
        #expect(try !reference(#"{"h":"\#(Self.hash)","n":1025,"d":"\#(big)"}"#).isWellFormed)
        // base64 without its padding does not decode: the record is skipped whole.
        #expect(throws: RecordError.self) { try Self.decode(Self.record("", item: Self.file(blocks: #"[{"h":"\#(Self.hash)","n":2,"d":"YWI"}]"#))) }
    }
}
