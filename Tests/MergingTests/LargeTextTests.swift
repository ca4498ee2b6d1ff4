import Foundation
import ItemModel
import Merging
import Testing

/// A large text with a few edits on each side: merged exactly, in bounded time. The size
/// is `UBIQFS_MERGE_LARGE_MB` (10 unless set); the time is printed (a debug build's: a
/// release build is several times faster).
@Suite struct LargeTextTests {
    @Test func aLargeFileWithFewEditsMerges() throws {
        let megabytes = ProcessInfo.processInfo.environment["UBIQFS_MERGE_LARGE_MB"].flatMap(Int.init) ?? 10
        var rng = SplitMix64(seed: 40)
        var lines: [String] = []
        var size = 0
        while size < megabytes << 20 {
            let line = "line \(lines.count): " + String(repeating: "abcdefgh", count: rng.below(10)) + "\n"
            lines.append(line)
            size += line.utf8.count
        }
        let (ours, theirs, expected) = Self.edited(lines)
        let bytes = [lines, ours, theirs].map { Array($0.joined().utf8) }
        let clock = ContinuousClock()
        let start = clock.now
        let merged = TextMerge.merge(base: bytes[0], ours: bytes[1], theirs: bytes[2])
        let elapsed = clock.now - start
        print("LargeTextTests: \(lines.count) lines, \(size >> 20) MB, 10 edits on each side, merged in \(elapsed)")
        #expect(merged == Array(expected.joined().utf8))
    }

    /// Ten edits on each side, far apart, applied from the end so that indices hold:
    /// replacements, deletions and replacements by two lines.
    static func edited(_ lines: [String]) -> (ours: [String], theirs: [String], expected: [String]) {
        var (ours, theirs, expected) = (lines, lines, lines)
        for edit in (0..<20).reversed() {
            let at = lines.count * edit / 20 + 1
            let replacement = edit % 3 == 0 ? [] : ["edited \(edit)\n"] + (edit % 3 == 1 ? ["inserted \(edit)\n"] : [])
            if edit.isMultiple(of: 2) {
                ours.replaceSubrange(at..<at + 1, with: replacement)
            } else {
                theirs.replaceSubrange(at..<at + 1, with: replacement)
            }
            expected.replaceSubrange(at..<at + 1, with: replacement)
        }
        return (ours, theirs, expected)
    }
}
