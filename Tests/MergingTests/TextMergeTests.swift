import ItemModel
import Merging
import Testing

/// The edges of the three-way text merge, each against what git merge-file gives.
@Suite struct TextMergeTests {
    static func merge(_ base: String, _ ours: String, _ theirs: String) -> String? {
        TextMerge.merge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Both sides the same: that text, whatever the base.
    @Test func identicalSidesGiveThatText() {
        #expect(Self.merge("a\nb\n", "a\nX\n", "a\nX\n") == "a\nX\n")
        #expect(Self.merge("a\nb\n", "", "") == "")
        #expect(Self.merge("", "x\r\ny", "x\r\ny") == "x\r\ny")
    }

    /// One side unchanged: the other side exactly, byte for byte.
    @Test func oneSideUnchangedGivesTheOther() {
        let base = "one\r\ntwo\nthree"
        for other in ["", "one\r\ntwo\nthree\n", "x\n\n\n", "one\ntwo\r\nthree", "\u{FEFF}é\r"] {
            #expect(Self.merge(base, base, other) == other)
            #expect(Self.merge(base, other, base) == other)
        }
    }

    /// A line both sides deleted is deleted once, and their other edits still land.
    @Test func aLineBothDeletedIsDeletedOnce() {
        #expect(Self.merge("a\nb\nc\n", "a\nc\n", "a\nc\n") == "a\nc\n")
        #expect(Self.merge("a\nb\nc\nd\ne\n", "a\nc\nd\ne\n", "a\nc\nd\nE\n") == "a\nc\nd\nE\n")
        #expect(Self.merge("a\nb\nc\nd\ne\n", "A\nc\nd\ne\n", "a\nc\nd\nE\n") == nil)
    }

    /// Edits at the first and last lines, and insertions before the first and after the last.
    @Test func editsAtTheStartAndTheEnd() {
        let base = "1\n2\n3\n4\n"
        #expect(Self.merge(base, "one\n2\n3\n4\n", "1\n2\n3\nfour\n") == "one\n2\n3\nfour\n")
        #expect(Self.merge(base, "0\n1\n2\n3\n4\n", "1\n2\n3\n4\n5\n") == "0\n1\n2\n3\n4\n5\n")
        #expect(Self.merge(base, "0\n1\n2\n3\n4\n", "-1\n1\n2\n3\n4\n") == nil)
        #expect(Self.merge(base, "2\n3\n4\n", "1\n2\n3\n") == "2\n3\n")
    }

    /// A last line without a newline is a line of its own: a line appended after it gives
    /// it one, which is a change of that line.
    @Test func aLastLineWithoutNewline() {
        let base = "a\nb\nc"
        #expect(Self.merge(base, "A\nb\nc", "a\nb\nc\nd") == "A\nb\nc\nd")
        #expect(Self.merge(base, "a\nb\nC", "a\nb\nc\nd") == nil)
        #expect(Self.merge(base, "A\nb\nc", "a\nb\nc\n") == "A\nb\nc\n")
        #expect(Self.merge(base, "a\nb\nc\n", "a\nb\nc\n") == "a\nb\nc\n")
        #expect(Self.merge(base, "a\nb\nc\n", "a\nb\nc\nd") == nil)
    }

    /// Lines ending in CRLF keep their endings; a line whose ending changed is a changed line.
    @Test func crlfLinesKeepTheirEndings() {
        let base = "a\r\nb\r\nc\r\nd\r\n"
        #expect(Self.merge(base, "A\r\nb\r\nc\r\nd\r\n", "a\r\nb\r\nc\r\nD\r\n") == "A\r\nb\r\nc\r\nD\r\n")
        #expect(Self.merge(base, "a\nb\r\nc\r\nd\r\n", "a\r\nb\r\nc\r\nd\n") == "a\nb\r\nc\r\nd\n")
        #expect(Self.merge(base, "a\r\nb\nc\r\nd\r\n", "a\r\nb\r\nC\r\nd\r\n") == nil)
    }

    /// From an empty base, only one side's text, or the same text, merges.
    @Test func anEmptyBase() {
        #expect(Self.merge("", "a\n", "") == "a\n")
        #expect(Self.merge("", "a\n", "b\n") == nil)
        #expect(Self.merge("", "a\nb", "a\nb") == "a\nb")
    }

    /// Changes to the same or adjacent lines, or insertions at the same place, are not
    /// merged; one unchanged line between them is enough.
    @Test func overlappingChangesAreNotMerged() {
        let base = "1\n2\n3\n4\n5\n"
        #expect(Self.merge(base, "1\nX\n3\n4\n5\n", "1\nY\n3\n4\n5\n") == nil)
        #expect(Self.merge(base, "1\nX\n3\n4\n5\n", "1\n2\nY\n4\n5\n") == nil)
        #expect(Self.merge(base, "1\nX\n3\n4\n5\n", "1\n2\n3\nY\n5\n") == "1\nX\n3\nY\n5\n")
        #expect(Self.merge(base, "1\n2\nX\n3\n4\n5\n", "1\n2\nY\n3\n4\n5\n") == nil)
        #expect(Self.merge(base, "1\n2\nX\n3\n4\n5\n", "1\n2\n3\n4\n5\n6\n") == "1\n2\nX\n3\n4\n5\n6\n")
    }

    /// Anything but UTF-8 text (invalid sequences, a NUL byte) is not merged, on any side.
    @Test func onlyUTF8TextIsMerged() throws {
        let text = Array("a\nb\n".utf8)
        for bad: [UInt8] in [[0xFF, 0x0A], [0x61, 0x00, 0x0A], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
            #expect(!TextMerge.isText(bad))
            #expect(TextMerge.merge(base: bad, ours: text, theirs: text) == nil)
            #expect(TextMerge.merge(base: text, ours: bad, theirs: text) == nil)
            #expect(TextMerge.merge(base: text, ours: text, theirs: bad) == nil)
            let error = try #require(throws: MergeError.self) { try TextMerge.merged(base: text, ours: text, theirs: bad) }
            #expect(error.code == .notText)
        }
        for good in ["", "\u{FEFF}é\r\n", "日本\n", "\u{10FFFF}"] { #expect(TextMerge.isText(Array(good.utf8))) }
    }

    /// Why there is no merge.
    @Test func theReasonIsGiven() throws {
        let error = try #require(throws: MergeError.self) {
            try TextMerge.merged(base: Array("a\n".utf8), ours: Array("b\n".utf8), theirs: Array("c\n".utf8))
        }
        #expect(error.code == .overlap)
        #expect(error.description == "both sides changed the text at base lines 1...1 differently [overlap]")
    }
}
