import ContentChunking
import ItemModel
import Testing

/// Cuts are format: a second client must cut the same bytes the same way. The known values
/// were computed by a second implementation (Python's hashlib and hmac, written from
/// `ChunkerParameters`' doc comment alone), so a change to the table, the masks or the
/// sizes fails here. Keyed cuts follow the key and nothing else.
@Suite struct KnownCutsTests {
    /// 256 KiB of SplitMix64(seed 41)'s words, little-endian.
    static let input: [UInt8] = {
        var rng = SplitMix64(seed: 41)
        return TestContent.randomBytes(262_144, &rng)
    }()

    @Test func unkeyedCutsAreTheKnownOnes() throws {
        let parameters = try ChunkerParameters.unkeyed(average: 4096)
        #expect(parameters.gear[0] == 0x3D76_7AA6_1DAA_0E47)
        #expect(parameters.gear[255] == 0xC6FE_D3A6_1A3D_EF7D)
        #expect((parameters.minimum, parameters.maximum) == (1024, 16384))
        let cuts = Chunker.cuts(of: Self.input, parameters: parameters)
        #expect(cuts.count == 55)
        #expect(Array(cuts.prefix(8)) == [4772, 7656, 12006, 16278, 20578, 24928, 29235, 33907])
    }

    @Test func keyedCutsAreTheKnownOnes() throws {
        let parameters = try ChunkerParameters.keyed(Array(0..<32) as [UInt8], average: 4096)
        #expect(parameters.gear[0] == 0x4749_F806_F328_D9A8)
        let cuts = Chunker.cuts(of: Self.input, parameters: parameters)
        #expect(cuts.count == 58)
        #expect(Array(cuts.prefix(8)) == [4766, 8912, 16912, 21780, 27317, 30724, 35439, 40281])
    }

    @Test func keysDecideTheCuts() throws {
        var rng = TestContent.generator(30)
        let bytes = TestContent.text(1 << 20, &rng)
        let key = TestContent.randomBytes(32, &rng)
        let other = TestContent.randomBytes(32, &rng)
        let cuts = Chunker.cuts(of: bytes, parameters: try .keyed(key, average: 8192))
        #expect(cuts == Chunker.cuts(of: bytes, parameters: try .keyed(key, average: 8192)))
        #expect(try ChunkerParameters.keyed(key, average: 8192) == ChunkerParameters.keyed(key, average: 8192))
        // Another key, or none, cuts elsewhere: hardly a cut in common.
        for parameters in [try ChunkerParameters.keyed(other, average: 8192), try ChunkerParameters.unkeyed(average: 8192)] {
            let elsewhere = Chunker.cuts(of: bytes, parameters: parameters)
            let shared = Set(cuts).intersection(elsewhere).count
            #expect(elsewhere != cuts && shared < cuts.count / 10, "seed \(TestContent.seed): \(shared) of \(cuts.count) cuts shared")
        }
    }
}
