import ContentChunking
import ItemModel
import Testing

/// Content fed in pieces of any size (as it streams from disk) is cut exactly as when it
/// is chunked at once.
@Suite struct StreamingTests {
    @Test func piecesOfRandomSizesGiveTheSameCuts() throws {
        let parameters = try ChunkerParameters.unkeyed(average: 4096)
        var rng = TestContent.generator(20)
        for round in 0..<12 {
            let bytes = round % 2 == 0 ? TestContent.randomBytes(300_000 + rng.below(100_000), &rng) : TestContent.text(300_000, &rng)
            let whole = Chunker.cuts(of: bytes, parameters: parameters)
            var chunker = Chunker(parameters: parameters)
            var cuts: [Int] = []
            var offset = 0
            while offset < bytes.count {
                // Empty pieces, single bytes, and pieces longer than the maximum chunk.
                let size = rng.pick([0, 1, 2, 63, 64, 1_000, 4_097, 20_000, 70_000])!
                let end = min(offset + size, bytes.count)
                cuts += chunker.append(bytes[offset..<end])
                offset = end
            }
            if let last = chunker.finish() { cuts.append(last) }
            #expect(cuts == whole, "seed \(TestContent.seed) round \(round)")
            #expect(chunker.finish() == nil)
        }
    }

    @Test func aSequenceWithoutContiguousStorageIsCutTheSame() throws {
        let parameters = try ChunkerParameters.unkeyed(average: 256)
        var rng = TestContent.generator(21)
        let bytes = TestContent.randomBytes(20_000, &rng)
        var chunker = Chunker(parameters: parameters)
        var cuts = chunker.append(bytes.lazy.map { $0 })
        if let last = chunker.finish() { cuts.append(last) }
        #expect(cuts == Chunker.cuts(of: bytes, parameters: parameters))
    }
}
