import Foundation
import Testing

@testable import ItemModel

/// Splices (CONTAINER-FORMAT.md, "Splices"): what a writer makes of two lists expands to
/// the new list exactly on a reader's base, names as new only blocks the base lacks, and
/// every malformed or foreign splice is refused. Random edits replay with
/// `UBIQFS_SPLICE_SEED=<seed>`.
@Suite struct BlockSpliceTests {
    static let seed = ProcessInfo.processInfo.environment["UBIQFS_SPLICE_SEED"].flatMap(UInt64.init) ?? 20_261_128

    static func block(_ rng: inout SplitMix64, pack: String? = nil) -> BlockReference {
        let hash = (0..<4).map { _ in String(format: "%016llx", rng.next()) }.joined()
        let length = Int64(8192 + rng.next() % 120_000)
        return BlockReference(hash: hash, length: length, pack: pack ?? String(format: "%016llx%016llx", rng.next(), rng.next()), offset: Int64(rng.next() % (1 << 23)))
    }

    static func list(_ count: Int, _ rng: inout SplitMix64) -> [BlockReference] {
        (0..<count).map { _ in block(&rng) }
    }

    /// A database's edits and a text's: pages replaced, runs inserted, deleted, moved and
    /// repeated.
    static func edited(_ base: [BlockReference], _ rng: inout SplitMix64) -> [BlockReference] {
        var blocks = base
        for _ in 0..<(1 + Int(rng.next() % 12)) {
            let at = blocks.isEmpty ? 0 : Int(rng.next() % UInt64(blocks.count))
            switch rng.next() % 5 {
            case 0 where !blocks.isEmpty: blocks[at] = block(&rng)
            case 1: blocks.insert(contentsOf: list(1 + Int(rng.next() % 4), &rng), at: at)
            case 2 where !blocks.isEmpty: blocks.removeSubrange(at..<min(blocks.count, at + 1 + Int(rng.next() % 8)))
            case 3 where blocks.count > 10:
                let run = Array(blocks[at..<min(blocks.count, at + 5)])
                blocks.removeSubrange(at..<min(blocks.count, at + 5))
                blocks.insert(contentsOf: run, at: Int(rng.next() % UInt64(blocks.count + 1)))
            case 4 where !blocks.isEmpty: blocks.insert(blocks[at], at: Int(rng.next() % UInt64(blocks.count + 1)))
            default: blocks.append(block(&rng))
            }
        }
        return blocks
    }

    @Test func randomEditsExpandToTheNewListExactly() throws {
        var rng = SplitMix64(seed: Self.seed)
        var (spliced, whole) = (0, 0)
        for round in 0..<400 {
            let base = Self.list(1 + Int(rng.next() % 300), &rng)
            let blocks = Self.edited(base, &rng)
            let context = "seed \(Self.seed) round \(round): replay with UBIQFS_SPLICE_SEED=\(Self.seed)"
            guard let splice = BlockSplice.make(from: base, to: blocks) else {
                #expect(Set(blocks).isDisjoint(with: base), "\(context): no splice though blocks are kept")
                whole += 1
                continue
            }
            spliced += 1
            // Through the record's bytes, as a reader gets it.
            let decoded = try RecordCodec.decode(BlockSplice.self, from: try RecordCodec.encode(splice))
            #expect(try decoded.applied(to: base) == blocks, "\(context)")
            #expect(Set(splice.newBlocks).isDisjoint(with: base), "\(context): a kept block sent as new")
            let inBase = Set(base)
            #expect(splice.newBlocks.count == blocks.filter { !inBase.contains($0) }.count, "\(context)")
        }
        #expect(spliced > 300, "the edits keep blocks, so nearly every round splices (\(whole) whole)")
    }

    /// The control: lists with no block in common go whole, and an empty base never splices.
    @Test func listsSharingNothingGoWhole() {
        var rng = SplitMix64(seed: Self.seed)
        #expect(BlockSplice.make(from: Self.list(20, &rng), to: Self.list(20, &rng)) == nil)
        #expect(BlockSplice.make(from: [], to: Self.list(3, &rng)) == nil)
    }

    /// A block of the same bytes elsewhere (stored again under a fresh key) is new: the
    /// reader would copy the base's place.
    @Test func aBlockKeptOnlyByNameIsSentWithItsPlace() throws {
        var rng = SplitMix64(seed: Self.seed)
        let base = Self.list(5, &rng)
        var moved = base[2]
        moved.pack = String(repeating: "e", count: 32)
        let blocks = [base[0], base[1], moved, base[3], base[4]]
        let splice = try #require(BlockSplice.make(from: base, to: blocks))
        #expect(splice.newBlocks == [moved])
        #expect(try splice.applied(to: base) == blocks)
    }

    /// The digest ignores places, and copies take the reader's places: a relocation
    /// applied on the reader after the writer cut its splice still expands, to the new place.
    @Test func copiesTakeTheReadersPlaces() throws {
        var rng = SplitMix64(seed: Self.seed)
        let base = Self.list(6, &rng)
        let blocks = Array(base.prefix(3)) + [Self.block(&rng)] + base.suffix(3)
        let splice = try #require(BlockSplice.make(from: base, to: blocks))
        var relocated = base
        relocated[1].pack = String(repeating: "f", count: 32)
        #expect(BlockSplice.digest(of: relocated) == splice.base)
        let expanded = try splice.applied(to: relocated)
        #expect(expanded[1].pack == String(repeating: "f", count: 32))
        #expect(expanded.map(\.hash) == blocks.map(\.hash))
    }

    /// The digest as the document spells it: SHA-256 of "h:n\n" per block (the value is
    /// `sha256sum`'s of those bytes).
    @Test func theDigestIsTheDocumentsOne() {
        let blocks = [BlockReference(hash: String(repeating: "a", count: 64), length: 3), BlockReference(hash: String(repeating: "b", count: 64), length: 10)]
        #expect(BlockSplice.digest(of: blocks) == "c8a1768ebdd3232ed84f6da1723c6d170d07387a45b0ce0c4de9ce8d7ad37f0f")
    }

    @Test func everyMalformedOrForeignSpliceIsRefused() throws {
        var rng = SplitMix64(seed: Self.seed)
        let base = Self.list(8, &rng)
        let fresh = Self.block(&rng)
        let good = BlockSplice(of: 8, base: BlockSplice.digest(of: base), runs: [.copy(from: 0, count: 4), .new([fresh]), .copy(from: 4, count: 4)])
        #expect(try good.applied(to: base) == Array(base.prefix(4)) + [fresh] + base.suffix(4), "the control applies")
        var malformed = fresh
        malformed.hash = "XYZ"
        let cases: [(String, BlockSplice, [BlockReference])] = [
            ("another base", good, Self.list(8, &rng)),
            ("a base of another length", good, Array(base.prefix(7))),
            ("no base at all", good, []),
            ("a copy past the end", BlockSplice(of: 8, base: good.base, runs: [.copy(from: 5, count: 4)]), base),
            ("a negative start", BlockSplice(of: 8, base: good.base, runs: [.copy(from: -1, count: 2)]), base),
            ("a copy of nothing", BlockSplice(of: 8, base: good.base, runs: [.copy(from: 0, count: 0)]), base),
            ("a copy of three numbers", BlockSplice(of: 8, base: good.base, runs: [BlockSplice.Run(copy: [0, 1, 2], new: nil)]), base),
            ("an empty new run", BlockSplice(of: 8, base: good.base, runs: [.new([])]), base),
            ("a malformed reference", BlockSplice(of: 8, base: good.base, runs: [.new([malformed])]), base),
            ("both fields", BlockSplice(of: 8, base: good.base, runs: [BlockSplice.Run(copy: [0, 1], new: [fresh])]), base),
            ("neither field", BlockSplice(of: 8, base: good.base, runs: [BlockSplice.Run(copy: nil, new: nil)]), base),
            ("too many blocks", BlockSplice(of: 8, base: good.base, runs: Array(repeating: .copy(from: 0, count: 8), count: BlockSplice.maxBlocks / 8 + 1)), base),
        ]
        for (what, splice, base) in cases {
            #expect(throws: RecordError.self, "\(what)") { try splice.applied(to: base) }
        }
    }

    /// The field names a second client reads, from the document's example.
    @Test func aSpliceDecodesAsTheDocumentWritesIt() throws {
        let hash = String(repeating: "c", count: 64)
        let json = #"{"of":3,"base":"x","runs":[{"copy":[0,1]},{"new":[{"h":"\#(hash)","n":5,"p":"\#(String(repeating: "d", count: 32))","o":0,"s":21}]},{"copy":[2,1]}]}"#
        let splice = try RecordCodec.decode(BlockSplice.self, from: Array(json.utf8))
        #expect(splice.of == 3 && splice.runs.count == 3 && splice.runs[0].copy == [0, 1] && splice.runs[1].new?.first?.stored == 21)
    }
}
