import Foundation
import Testing

@testable import ItemModel

/// Format 4's `merges` and `settings.merge` as CONTAINER-FORMAT.md ("Format 4") states
/// them, checked on hand-written bytes.
@Suite struct MergeRecordTests {
    static let id = RecordDecodingTests.id
    static let hash = RecordDecodingTests.hash

    static func input(device: String = "laptop", size: Int = 3, blocks: String? = nil) -> String {
        #"{"device":"\#(device)","time":5,"size":\#(size),"mtime":4,"blocks":\#(blocks ?? #"[{"h":"\#(hash)","n":3}]"#)}"#
    }

    static func merge(id: String = id, base: Int = 1, with: Int = 2, kind: String = "text", inputs: [String] = [input()]) -> String {
        #"{"id":"\#(id)","base":\#(base),"with":\#(with),"kind":"\#(kind)","inputs":[\#(inputs.joined(separator: ","))]}"#
    }

    static func decodedMerge(_ json: String) throws -> MergeNote {
        let record = try RecordDecodingTests.decode(RecordDecodingTests.record(#","merges":[\#(json)]"#))
        return try #require(record.merges?.first)
    }

    @Test func aMergeRoundTripsAndIsCheckedAgainstItsRecord() throws {
        let note = try Self.decodedMerge(Self.merge())
        #expect(note.id == ItemID(Self.id) && note.base == 1 && note.with == 2 && note.kind == "text")
        #expect(note.inputs == [MergeInput(device: "laptop", time: 5, size: 3, mtime: 4, blocks: [BlockReference(hash: Self.hash, length: 3)])])
        #expect(try RecordValidator.sanitized(note, seq: 3) == note)
        let again = try RecordCodec.decode(JournalRecord.self, from: try RecordCodec.encode(try RecordDecodingTests.decode(RecordDecodingTests.record(#","merges":[\#(Self.merge())]"#))))
        #expect(again.merges == [note])
        // Absent or null: no merges.
        #expect(try RecordDecodingTests.decode(RecordDecodingTests.record("")).merges == nil)
        #expect(try RecordDecodingTests.decode(RecordDecodingTests.record(#","merges":null"#)).merges == nil)
    }

    /// Each rule of the format refuses the merge alone, with a reason.
    @Test(arguments: [
        (merge(id: "root"), "malformed id"),
        (merge(id: "xyz"), "malformed id"),
        (merge(base: 0), "base"),
        (merge(base: 2, with: 2), "base"),
        (merge(with: 3), "base"),
        (merge(kind: ""), "kind"),
        (merge(kind: "Text"), "kind"),
        (merge(kind: "seventeenletterss"), "kind"),
        (merge(inputs: []), "0 inputs"),
        (merge(inputs: Array(repeating: input(), count: 17)), "17 inputs"),
        (merge(inputs: [input(device: "")]), "device"),
        (merge(inputs: [input(size: 4)]), "add up"),
        (merge(inputs: [input(size: 3, blocks: #"[{"h":"zz","n":3}]"#)]), "malformed content"),
        (merge(inputs: [input(size: -1, blocks: "[]")]), "malformed content"),
    ])
    func aMergeBreakingARuleIsRefused(json: String, reason: String) throws {
        let note = try Self.decodedMerge(json)
        #expect(throws: RecordError.self) { try RecordValidator.sanitized(note, seq: 3) }
        do {
            _ = try RecordValidator.sanitized(note, seq: 3)
        } catch {
            #expect(error.message.contains(reason), "\(error.message)")
        }
    }

    /// A field of another JSON type makes the record undecodable, as for any field.
    @Test func aMergeFieldOfAnotherTypeMakesTheRecordUndecodable() {
        for bad in [#""merges":{}"#, #""merges":[{"id":1,"base":1,"with":2,"kind":"text","inputs":[]}]"#, #""merges":[{"id":"a","base":"1","with":2,"kind":"text","inputs":[]}]"#] {
            #expect(throws: RecordError.self, "\(bad)") { try RecordDecodingTests.decode(RecordDecodingTests.record("," + bad)) }
        }
    }

    /// A missing kind takes its default, an unknown one is ignored; absent, the defaults.
    @Test func mergeSettingsTakeDefaultsAndIgnoreUnknownKinds() throws {
        func settings(_ json: String) throws -> ContainerSettings {
            try JSONDecoder().decode(ContainerSettings.self, from: Data(json.utf8))
        }
        let retention = #""retention":{"versions":1,"trash":2}"#
        #expect(try settings("{\(retention)}").merge == nil)
        #expect(try settings("{\(retention)}").merging == .standard)
        #expect(MergeKinds.standard == MergeKinds(text: true, sqlite: false, json: false))
        let partial = try settings(#"{\#(retention),"merge":{"sqlite":true,"video":true}}"#)
        #expect(partial.merging == MergeKinds(text: true, sqlite: true, json: false))
        let off = try settings(#"{\#(retention),"merge":{"text":false}}"#)
        #expect(off.merging == MergeKinds(text: false, sqlite: false, json: false))
        var kinds = MergeKinds.standard
        kinds["json"] = true
        kinds["video"] = true
        #expect(kinds == MergeKinds(text: true, sqlite: false, json: true) && kinds["video"] == nil)
        let encoded = String(decoding: try JSONEncoder().encode(partial), as: UTF8.self)
        #expect(try settings(encoded) == partial)
        #expect(throws: (any Error).self) { try settings(#"{\#(retention),"merge":{"text":1}}"#) }
    }
}
