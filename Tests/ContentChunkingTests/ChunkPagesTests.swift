import ContentChunking
import ItemModel
import Testing

/// The pages a chunk list is cut into: bounded, about 64 chunks each, and content-defined,
/// so chunks inserted or removed change the pages around them only. Pages of a fixed count
/// (the control) change after every insertion.
@Suite struct ChunkPagesTests {
    static let hex = Array("0123456789abcdef".utf8)

    /// Random chunk names, as uniform as SHA-256's.
    static func names(_ count: Int, _ rng: inout SplitMix64) -> [String] {
        (0..<count).map { _ in String(decoding: (0..<64).map { _ in hex[rng.below(16)] }, as: UTF8.self) }
    }

    static func pages(_ names: [String], ends: [Int]) -> [[String]] {
        zip([0] + ends, ends).map { Array(names[$0..<$1]) }
    }

    @Test func pagesAreBoundedAndNearTheirMean() {
        var rng = TestContent.generator(60)
        let names = Self.names(40_000, &rng)
        let ends = ChunkPages.ends(of: names)
        let sizes = zip([0] + ends, ends).map { $1 - $0 }
        #expect(ends.last == names.count && sizes.allSatisfy { $0 >= 1 && $0 <= ChunkPages.maximumEntries })
        let mean = Double(names.count) / Double(ends.count)
        #expect(mean > 56 && mean < 72, "\(mean)")
        #expect(ChunkPages.ends(of: []) == [])
        #expect(ChunkPages.ends(of: ["0000" + String(repeating: "f", count: 60)]) == [1])
        // Names that never end a page: pages of the maximum.
        let high = Array(repeating: String(repeating: "f", count: 64), count: 600)
        #expect(ChunkPages.ends(of: high) == [256, 512, 600])
    }

    /// Chunks inserted, removed or replaced at one place leave all pages but the one the
    /// edit falls in and one it may join or split off as they were (more only inside a run
    /// of over 256 chunks that end no page, whose forced ends move: none in these seeds);
    /// fixed pages of 64 (the control) lose more after nearly every insertion or removal.
    @Test func anEditChangesThePagesAroundItOnly() {
        var rng = TestContent.generator(61)
        var (shifting, fixedLosing) = (0, 0)
        for round in 0..<150 {
            let names = Self.names(1500, &rng)
            var edited = names
            let at = rng.below(names.count - 10)
            let removed = round % 3 == 0 ? 0 : 1 + rng.below(4)
            edited.replaceSubrange(at..<(at + removed), with: Self.names(round % 3 == 1 ? 0 : 1 + rng.below(4), &rng))
            let before = Set(Self.pages(names, ends: ChunkPages.ends(of: names)))
            let new = Self.pages(edited, ends: ChunkPages.ends(of: edited)).filter { !before.contains($0) }.count
            #expect(new <= 2, "round \(round): \(new) new pages")
            let fixed = { (list: [String]) in Self.pages(list, ends: Array(stride(from: 64, to: list.count, by: 64)) + [list.count]) }
            let fixedBefore = Set(fixed(names))
            guard edited.count != names.count else { continue }
            shifting += 1
            if fixed(edited).filter({ !fixedBefore.contains($0) }).count > 2 { fixedLosing += 1 }
        }
        #expect(fixedLosing * 4 > shifting * 3, "the control: fixed pages lost more than two pages after \(fixedLosing) of \(shifting) shifting edits")
    }
}
