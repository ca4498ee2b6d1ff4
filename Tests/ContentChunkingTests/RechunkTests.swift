import ContentChunking
import ItemModel
import Testing

/// Chunking after edits from the old cuts: exactly the cuts of chunking the whole edited
/// content, from reads near the edits only. Old cuts moved by the edits without chunking
/// again (the control) are mostly wrong, so the comparison has teeth.
@Suite struct RechunkTests {
    static let average = 4096

    struct Tally {
        var cases = 0, edits = 0, bytesRead = 0, worstPerEdit = 0, naiveWrong = 0
    }

    @Test func editsGiveTheCutsOfTheWholeEditedContent() throws {
        let parameters = try ChunkerParameters.unkeyed(average: Self.average)
        var rng = TestContent.generator(40)
        var tally = Tally()
        for round in 0..<8 {
            let bytes = round % 2 == 0 ? TestContent.randomBytes(1 << 20, &rng) : TestContent.text(1 << 20, &rng)
            let cuts = Chunker.cuts(of: bytes, parameters: parameters)
            for index in 0..<12 {
                let edits = index % 3 == 0
                    ? [GeneratedEdit.random(GeneratedEdit.Kind.allCases[rng.below(5)], in: bytes, &rng)]
                    : GeneratedEdit.scattered(1 + rng.below(10), in: bytes, &rng)
                check(bytes, cuts, edits, parameters, "round \(round) case \(index)", &tally)
            }
        }
        print("RechunkTests: seed \(TestContent.seed), \(tally.cases) cases, \(tally.edits) edits of 1 MiB: \(tally.bytesRead / max(tally.edits, 1)) bytes read per edit (worst \(tally.worstPerEdit)); moved old cuts wrong in \(tally.naiveWrong)")
        #expect(tally.bytesRead / tally.edits <= 5 * Self.average)
        #expect(tally.naiveWrong > 0)
    }

    @Test func editsAtTheEdgesAndOfEverything() throws {
        let parameters = try ChunkerParameters.unkeyed(average: Self.average)
        var rng = TestContent.generator(41)
        let bytes = TestContent.text(200_000, &rng)
        let n = bytes.count
        let cases: [(String, [UInt8], [(Range<Int>, Int)])] = [
            ("no edit", bytes, []), ("append", bytes, [(n..<n, 5_000)]), ("truncate", bytes, [(n - 3_000..<n, 0)]),
            ("insert at the start", bytes, [(0..<0, 10)]), ("delete the first byte", bytes, [(0..<1, 0)]),
            ("delete everything", bytes, [(0..<n, 0)]), ("replace everything", bytes, [(0..<n, 30_000)]),
            ("into empty content", [], [(0..<0, 9_000)]), ("touching edits", bytes, [(100..<200, 50), (200..<200, 7), (200..<300, 100)]),
            ("shorter than the minimum", Array(bytes.prefix(500)), [(10..<20, 3)]), ("an edit at every page", bytes, stride(from: 0, to: n, by: 4096).map { ($0..<min($0 + 8, n), 8) }),
        ]
        var tally = Tally()
        for (name, old, spans) in cases {
            let edits = spans.map { GeneratedEdit(kind: .replaceBytes, edit: ChunkEdit(replaced: $0.0, length: $0.1), replacement: TestContent.randomBytes($0.1, &rng)) }
            check(old, Chunker.cuts(of: old, parameters: parameters), edits, parameters, name, &tally)
        }
    }

    @Test func aLargeContentIsReadOnlyAroundItsEdit() throws {
        let parameters = try ChunkerParameters.unkeyed(average: 16384)
        var rng = TestContent.generator(42)
        let bytes = TestContent.text(8 << 20, &rng)
        let cuts = Chunker.cuts(of: bytes, parameters: parameters)
        let edit = GeneratedEdit.random(.insertLine, in: bytes, &rng)
        let edited = edit.applied(to: bytes)
        let result = Chunker.cuts(after: [edit.edit], to: cuts, parameters: parameters) { Array(edited[$0]) }
        #expect(result.cuts == Chunker.cuts(of: edited, parameters: parameters))
        #expect(result.read.count == 1 && result.bytesRead < edited.count / 50, "read \(result.read) of \(edited.count)")
    }

    /// One case: the rechunk's cuts against the whole content's, what it read against what
    /// its `read` was asked, and the control of old cuts merely moved.
    func check(_ old: [UInt8], _ oldCuts: [Int], _ edits: [GeneratedEdit], _ parameters: ChunkerParameters, _ name: String, _ tally: inout Tally) {
        let new = GeneratedEdit.apply(edits, to: old)
        var asked: [Range<Int>] = []
        let result = Chunker.cuts(after: edits.map(\.edit), to: oldCuts, parameters: parameters) { range in
            asked.append(range)
            return Array(new[range])
        }
        let whole = Chunker.cuts(of: new, parameters: parameters)
        let problem = "seed \(TestContent.seed) \(name): edits \(edits.map(\.description)); replay with UBIQFS_CHUNK_SEED=\(TestContent.seed)"
        #expect(result.cuts == whole, "\(problem)")
        #expect(result.bytesRead == asked.reduce(0) { $0 + $1.count } && result.read.count <= max(asked.count, 1), "\(problem)")
        let lengths = edits.reduce(0) { $0 + $1.edit.length }
        #expect(result.bytesRead <= lengths + edits.count * 12 * parameters.average, "\(problem): read \(result.bytesRead)")
        // A kept chunk is an old chunk's bytes; every other chunk was read whole.
        let newChunks = zip([0] + result.cuts, result.cuts).map { $0..<$1 }
        let oldChunks = zip([0] + oldCuts, oldCuts).map { $0..<$1 }
        for (index, chunk) in newChunks.enumerated() {
            if let oldIndex = result.kept[index] {
                #expect(new[chunk] == old[oldChunks[oldIndex]], "\(problem): chunk \(index) kept as \(oldIndex)")
            } else {
                let read = result.read.contains { $0.lowerBound <= chunk.lowerBound && $0.upperBound >= chunk.upperBound }
                #expect(read, "\(problem): chunk \(index) \(chunk) neither read nor kept")
            }
        }
        tally.cases += 1
        tally.edits += edits.count
        tally.bytesRead += result.bytesRead
        tally.worstPerEdit = max(tally.worstPerEdit, result.bytesRead / max(edits.count, 1))
        if Self.movedOldCuts(oldCuts, edits.map(\.edit), newLength: new.count) != whole { tally.naiveWrong += 1 }
    }

    /// The control: the old cuts outside the edits, moved by them, and the new end.
    static func movedOldCuts(_ cuts: [Int], _ edits: [ChunkEdit], newLength: Int) -> [Int] {
        var moved: [Int] = []
        for cut in cuts.dropLast() where !edits.contains(where: { $0.replaced.contains(cut) }) {
            moved.append(cut + edits.filter { $0.replaced.upperBound <= cut }.reduce(0) { $0 + $1.shift })
        }
        return newLength == 0 ? [] : moved + [newLength]
    }
}
