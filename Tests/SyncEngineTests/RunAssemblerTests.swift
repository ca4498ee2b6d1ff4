import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// A streamed run cut into its blobs: against slices of the same bytes (the oracle), for
/// runs of random blobs and gaps streamed in pieces of random sizes (empty and one-byte
/// ones among them). `UBIQFS_RANDOM_SEED=<seed>` replays a run.
@Suite struct RunAssemblerTests {
    @Test func blobsAreTheSlicesOfTheStreamWhateverThePieces() {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? 20_261_128
        var rng = SplitMix64(seed: seed)
        for round in 0..<200 {
            let start = Int64.random(in: 0...5000, using: &rng)
            var ranges: [Range<Int64>] = []
            var at = start
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                at += Int64.random(in: 0...3, using: &rng) == 0 ? Int64.random(in: 1...300, using: &rng) : 0
                let length = Int64.random(in: 1...2000, using: &rng)
                ranges.append(at ..< at + length)
                at += length
            }
            let end = ranges.last!.upperBound
            let stream = (start ..< end).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let shuffled = ranges.shuffled(using: &rng)
            // The whole stream, then all of it but its last byte (the control: not complete).
            for cut in [0, 1] {
                var run = RunAssembler(shuffled, from: start)
                var told: [(index: Int, bytes: [UInt8])] = []
                var offset = 0
                while offset < stream.count - cut {
                    let length = min(stream.count - cut - offset, [0, 1, Int.random(in: 1...700, using: &rng)].randomElement(using: &rng)!)
                    told += run.take(Array(stream[offset ..< offset + length]))
                    offset += length
                }
                let expected = shuffled.indices.sorted { shuffled[$0].lowerBound < shuffled[$1].lowerBound }
                let wanted = cut == 0 ? expected : Array(expected.dropLast())
                #expect(told.map(\.index) == wanted, "seed \(seed), round \(round)")
                for (index, bytes) in told {
                    let range = shuffled[index]
                    #expect(bytes == Array(stream[Int(range.lowerBound - start) ..< Int(range.upperBound - start)]), "seed \(seed), round \(round)")
                }
                #expect(run.isComplete == (cut == 0), "seed \(seed), round \(round)")
                #expect(run.position == end - Int64(cut))
            }
        }
    }
}
