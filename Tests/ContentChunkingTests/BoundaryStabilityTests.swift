import ContentChunking
import ItemModel
import Testing

/// The property content-defined chunks exist for: after a small edit anywhere, every chunk
/// but the few around the edit is one deduplication already has. Fixed-size blocks, the
/// control, lose every block after an insertion or a deletion.
///
/// Nearly always one chunk is new, seldom two or three. Normalized chunking's mask depends
/// on the chunk's length, so an edit that moves a cut across the average can throw the
/// following cuts off until the chunkings meet again, each chunk after with about even odds:
/// about one edit in a hundred costs more than three chunks (measured over 8,000 edits: 0.6
/// to 0.8%), which buys chunk sizes tight around the average and the lowest mean cost.
@Suite struct BoundaryStabilityTests {
    static let average = 4096
    static let contentSize = 256 * 1024

    enum Content: CaseIterable { case random, text }

    struct Tally {
        var cases = 0, newChunks = 0, overThree = 0, worst = 0, shiftingEdits = 0, fixedLosingMost = 0
    }

    @Test(arguments: Content.allCases)
    func smallEditsChangeOnlyTheChunksAroundThem(_ content: Content) throws {
        let parameters = try ChunkerParameters.unkeyed(average: Self.average)
        var rng = TestContent.generator(content == .random ? 1 : 2)
        var tally = Tally()
        for round in 0..<4 {
            let bytes = content == .random ? TestContent.randomBytes(Self.contentSize, &rng) : TestContent.text(Self.contentSize, &rng)
            let cuts = Chunker.cuts(of: bytes, parameters: parameters)
            for index in 0..<50 {
                let edit = GeneratedEdit.random(GeneratedEdit.Kind.allCases[index % 5], in: bytes, &rng)
                let edited = edit.applied(to: bytes)
                let newCuts = Chunker.cuts(of: edited, parameters: parameters)
                let changed = TestContent.newChunks(old: bytes, oldCuts: cuts, new: edited, newCuts: newCuts).count
                tally.cases += 1
                tally.newChunks += changed
                tally.worst = max(tally.worst, changed)
                if changed > 3 { tally.overThree += 1 }
                #expect(changed <= 16, "seed \(TestContent.seed) \(content) round \(round) case \(index): \(edit) made \(changed) new chunks; replay with UBIQFS_CHUNK_SEED=\(TestContent.seed)")
                checkControl(bytes, edited, edit, &tally)
            }
        }
        print("BoundaryStabilityTests \(content): seed \(TestContent.seed), \(tally.cases) edits: \(tally.newChunks) new chunks, \(tally.overThree) edits over three (worst \(tally.worst)); fixed blocks lost most of those after \(tally.fixedLosingMost) of \(tally.shiftingEdits) shifting edits")
        #expect(Double(tally.newChunks) <= 1.5 * Double(tally.cases) && tally.overThree <= tally.cases / 20)
        // The control: fixed blocks lose more than half the blocks after nearly every edit that shifts bytes.
        #expect(tally.shiftingEdits > 20 && tally.fixedLosingMost >= tally.shiftingEdits * 9 / 10)
    }

    /// Fixed-size blocks of the same average on the same edit, when it shifts what follows
    /// and leaves at least eight blocks after it.
    func checkControl(_ bytes: [UInt8], _ edited: [UInt8], _ edit: GeneratedEdit, _ tally: inout Tally) {
        let blocksAfter = (edited.count - edit.edit.replaced.upperBound) / Self.average
        guard edit.edit.shift != 0, blocksAfter >= 8 else { return }
        let fixed = TestContent.newChunks(
            old: bytes, oldCuts: TestContent.fixedCuts(bytes.count, size: Self.average),
            new: edited, newCuts: TestContent.fixedCuts(edited.count, size: Self.average)
        ).count
        tally.shiftingEdits += 1
        if fixed > blocksAfter / 2 { tally.fixedLosingMost += 1 }
    }
}
