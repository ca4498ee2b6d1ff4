import Foundation
import ItemModel
import Testing

@testable import Merging

/// The diff under the merge: minimal and valid on random sequences (against a dynamic
/// programming LCS), changes placed where git places them, and a bounded cost.
@Suite struct LineDiffTests {
    /// Two texts' lines, numbered together.
    static func numbered(_ base: String, _ side: String) -> ([Int32], [Int32]) {
        var numbering = LineNumbering()
        return (numbering.numbers(of: Lines(Array(base.utf8))), numbering.numbers(of: Lines(Array(side.utf8))))
    }

    static func hunks(_ base: String, _ side: String) throws -> [Hunk] {
        let (a, b) = numbered(base, side)
        return try LineDiff.hunks(from: a, to: b)
    }

    /// The length of a longest common subsequence, by dynamic programming.
    static func lcs(_ a: [Int32], _ b: [Int32]) -> Int {
        var row = Array(repeating: 0, count: b.count + 1)
        for x in a {
            var diagonal = 0
            for (j, y) in b.enumerated() {
                let above = row[j + 1]
                row[j + 1] = x == y ? diagonal + 1 : max(row[j], above)
                diagonal = above
            }
        }
        return row[b.count]
    }

    /// Every script keeps lines that pair up equal, and as many as an LCS has: over small
    /// alphabets (many equal lines), lengths far apart, and one side empty.
    @Test func myersFindsAMinimalScript() throws {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? 20_260_041
        var rng = SplitMix64(seed: seed)
        for index in 0..<20_000 {
            let alphabet = 1 + rng.below(rng.chance(50) ? 3 : 8)
            let a = (0..<rng.below(rng.chance(10) ? 60 : 20)).map { _ in Int32(rng.below(alphabet)) }
            let b = (0..<rng.below(rng.chance(10) ? 60 : 20)).map { _ in Int32(rng.below(alphabet)) }
            var search = MyersSearch(a, b, budget: .max)
            try search.run()
            let keptA = a.indices.filter { !search.aChanged[$0] }.map { a[$0] }
            let keptB = b.indices.filter { !search.bChanged[$0] }.map { b[$0] }
            guard keptA == keptB, keptA.count == Self.lcs(a, b) else {
                Issue.record("seed \(seed) case \(index): \(a) -> \(b) keeps \(keptA.count) lines, an LCS has \(Self.lcs(a, b))")
                return
            }
        }
    }

    /// A change equal lines let move goes as low as it can (git's diff), unless it can line
    /// up with a change on the other side.
    @Test func changesSitWhereGitPutsThem() throws {
        // Deleting one of two equal lines deletes the second.
        #expect(try Self.hunks("a\nb\nb\nc\n", "a\nb\nc\n") == [Hunk(base: 2..<3, side: 2..<2)])
        // A block inserted after a copy of its last line goes after the copy.
        #expect(try Self.hunks("x\n}\n", "x\n}\ny\n}\n") == [Hunk(base: 2..<2, side: 2..<4)])
        // A deletion that can line up with an insertion does: one replacement, not two hunks.
        #expect(try Self.hunks("x\nc\nc\nc\ny\n", "x\nZ\nc\nc\ny\n") == [Hunk(base: 1..<2, side: 1..<2)])
    }

    /// Past its budget the comparison gives up rather than take long: two unrelated files.
    @Test func aComparisonHasABoundedCost() throws {
        var rng = SplitMix64(seed: 7)
        let (a, b) = Self.numbered((0..<5000).map { _ in "\(rng.below(1000))\n" }.joined(), (0..<5000).map { _ in "\(rng.below(1000))\n" }.joined())
        let error = try #require(throws: MergeError.self) { try LineDiff.hunks(from: a, to: b, budget: 100_000) }
        #expect(error.code == .tooManyChanges)
        #expect(try LineDiff.hunks(from: a, to: b, budget: .max).count > 100)
    }
}
