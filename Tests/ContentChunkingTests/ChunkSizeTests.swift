import ContentChunking
import ItemModel
import Testing

/// Chunk sizes: within the bounds, around the average on random content, and bounded on
/// content that never matches a mask (or always does).
@Suite struct ChunkSizeTests {
    @Test(arguments: [4096, 16384, 65536])
    func randomContentAveragesNearTheTarget(_ average: Int) throws {
        let parameters = try ChunkerParameters.unkeyed(average: average)
        var rng = TestContent.generator(10 + UInt64(average))
        let bytes = TestContent.randomBytes(average * 1_000, &rng)
        let cuts = Chunker.cuts(of: bytes, parameters: parameters)
        checkBounds(cuts, length: bytes.count, parameters)
        let mean = Double(bytes.count) / Double(cuts.count)
        print("ChunkSizeTests: average \(average): \(cuts.count) chunks, mean \(Int(mean)) (\(String(format: "%.2f", mean / Double(average)))x)")
        #expect(abs(mean / Double(average) - 1) < 0.25, "seed \(TestContent.seed): mean \(mean) for \(average)")
    }

    @Test func textAndKeyedChunksKeepTheBounds() throws {
        var rng = TestContent.generator(11)
        let bytes = TestContent.text(1 << 20, &rng)
        for parameters in [try ChunkerParameters.unkeyed(average: 4096), try ChunkerParameters.keyed([UInt8](repeating: 7, count: 32), average: 4096)] {
            checkBounds(Chunker.cuts(of: bytes, parameters: parameters), length: bytes.count, parameters)
        }
    }

    @Test func degenerateContentEndsAndRespectsTheMaximum() throws {
        let parameters = try ChunkerParameters.unkeyed(average: 4096)
        let (minimum, maximum) = (parameters.minimum, parameters.maximum)
        let pattern = Array("abc".utf8)
        let inputs: [(String, [UInt8])] = [
            ("empty", []), ("one byte", [42]), ("exactly minimum", [UInt8](repeating: 1, count: minimum)),
            ("minimum + 1", [UInt8](repeating: 1, count: minimum + 1)), ("exactly maximum", [UInt8](repeating: 1, count: maximum)),
            ("maximum + 1", [UInt8](repeating: 1, count: maximum + 1)), ("zeros", [UInt8](repeating: 0, count: 1 << 20)),
            ("0xFF", [UInt8](repeating: 0xFF, count: 1 << 20)),
            ("a short pattern", (0..<(1 << 20)).map { pattern[$0 % 3] }),
        ]
        for (name, bytes) in inputs {
            let cuts = Chunker.cuts(of: bytes, parameters: parameters)
            checkBounds(cuts, length: bytes.count, parameters, name)
        }
        #expect(Chunker.cuts(of: [UInt8](), parameters: parameters) == [])
        #expect(Chunker.cuts(of: [UInt8](repeating: 1, count: minimum), parameters: parameters) == [minimum])
        // Long stretches of one byte: one hash value forever, so the maximum cuts them.
        let zeros = Chunker.cuts(of: [UInt8](repeating: 0, count: 1 << 20), parameters: parameters)
        #expect(zeros.count <= (1 << 20) / (minimum + 1) + 1)
    }

    @Test func averagesThatAreNoPowerOfTwoOrOutOfRangeAreRefused() {
        for average in [0, -4096, 4095, 6144, 128, 1 << 29] {
            #expect(throws: ChunkingError.self) { try ChunkerParameters.unkeyed(average: average) }
        }
        #expect((try? ChunkerParameters.unkeyed(average: 256)) != nil)
        #expect((try? ChunkerParameters.unkeyed(average: 1 << 28)) != nil)
    }

    /// Cuts ascend to the length; every chunk but the last is longer than the minimum and no
    /// chunk is longer than the maximum.
    func checkBounds(_ cuts: [Int], length: Int, _ parameters: ChunkerParameters, _ name: String = "") {
        #expect(cuts.last ?? 0 == length, "\(name)")
        for (index, (start, end)) in zip([0] + cuts, cuts).enumerated() {
            let size = end - start
            let isLast = index == cuts.count - 1
            if size > parameters.maximum || size <= 0 || (!isLast && size <= parameters.minimum) {
                Issue.record("\(name) seed \(TestContent.seed): chunk \(index) of \(size) bytes at \(start) (minimum \(parameters.minimum), maximum \(parameters.maximum))")
                return
            }
        }
    }
}
