import ContentChunking
import Crypto
import ItemModel
import Testing

/// What chunk sizes cost, printed to choose them (issue 41's goals: a line inserted at the
/// start of 256 MiB uploads under 2%; ten rows of a 200 MiB SQLite database under 1 MiB).
/// For each average, on 64 MiB: the bytes of new chunks (not found among the old ones)
/// after one line inserted at the start of text, after a line inserted at each of 20 random
/// places (the mean), and after ten scattered 4 KiB pages of a database-like file are
/// rewritten (the mean of 5 such edits); the chunk count; the chunker's speed in this
/// build. The fixed blocks ubiqfs cut before chunks are the last row. Nothing here is
/// timed against a bound.
@Suite struct ChunkingMeasureTests {
    static let size = 64 << 20
    static let averages = [16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20]

    /// One average's cuts of both contents and the hashes of their chunks.
    struct Chunking {
        var parameters: ChunkerParameters
        var textCuts: [Int], pageCuts: [Int]
        var knownText: Set<SHA256.Digest>, knownPages: Set<SHA256.Digest>
        var megabytesPerSecond: Double
    }

    /// Off Swift's cooperative pool: seconds of CPU there would starve the tests that await.
    @Test func chunkSizesAgainstTheirCosts() async throws {
        let (table, cut) = try await OffloadedWork.run { () throws -> (String, Bool) in try Self.measure() }
        print(table)
        #expect(cut)
    }

    /// The table, and whether every average cut both contents.
    static func measure() throws -> (String, Bool) {
        var rng = TestContent.generator(50)
        let text = TestContent.text(Self.size, &rng)
        let pages = TestContent.randomBytes(Self.size, &rng)
        let chunkings = try Self.averages.map { try Self.chunking(text, pages, average: $0) }
        let start = [GeneratedEdit(kind: .insertLine, edit: ChunkEdit(replaced: 0..<0, length: 31), replacement: Array("    let chunk = the file + 42;\n".utf8))]
        let lines = (0..<20).map { _ in [GeneratedEdit.random(.insertLine, in: text, &rng)] }
        let pageSets = (0..<5).map { _ in Self.pageEdits(pages.count, &rng) }
        // Each edited content is made once and costed under every average.
        let lineAtStart = Self.costs(start, text, chunkings) { ($0.textCuts, $0.knownText) }
        let lineAnywhere = lines.map { Self.costs($0, text, chunkings) { ($0.textCuts, $0.knownText) } }
        let pagesCost = pageSets.map { Self.costs($0, pages, chunkings) { ($0.pageCuts, $0.knownPages) } }
        var rows = chunkings.indices.map { index in
            [
                "\(Self.averages[index] >> 10) KiB", "\(chunkings[index].pageCuts.count)",
                Self.mib(lineAtStart[index]) + String(format: " (%.2f%%)", 100 * Double(lineAtStart[index]) / Double(Self.size)),
                Self.mib(lineAnywhere.reduce(0) { $0 + $1[index] } / lines.count), Self.mib(pagesCost.reduce(0) { $0 + $1[index] } / pageSets.count),
                String(format: "%.0f", chunkings[index].megabytesPerSecond),
            ]
        }
        rows.append(Self.fixedBlocks(text, pages, start, Array(lines.prefix(4)), Array(pageSets.prefix(2))))
        return (Self.table(rows), chunkings.allSatisfy { $0.textCuts.count > 1 && $0.pageCuts.count > 1 })
    }

    static func chunking(_ text: [UInt8], _ pages: [UInt8], average: Int) throws -> Chunking {
        let parameters = try ChunkerParameters.unkeyed(average: average)
        let started = ContinuousClock.now
        let pageCuts = Chunker.cuts(of: pages, parameters: parameters)
        let speed = Double(pages.count) / 1e6 / ((ContinuousClock.now - started) / .seconds(1))
        let textCuts = Chunker.cuts(of: text, parameters: parameters)
        return Chunking(
            parameters: parameters, textCuts: textCuts, pageCuts: pageCuts,
            knownText: Set(TestContent.chunkHashes(text, textCuts)), knownPages: Set(TestContent.chunkHashes(pages, pageCuts)),
            megabytesPerSecond: speed
        )
    }

    /// Ten 4 KiB pages at random page offsets, rewritten with new bytes.
    static func pageEdits(_ length: Int, _ rng: inout SplitMix64) -> [GeneratedEdit] {
        Set((0..<10).map { _ in rng.below(length / 4096) * 4096 }).sorted().map { page in
            GeneratedEdit(kind: .replaceBytes, edit: ChunkEdit(replaced: page..<(page + 4096), length: 4096), replacement: TestContent.randomBytes(4096, &rng))
        }
    }

    /// The bytes of new chunks after `edits` under each average, rechunked around them: the
    /// chunks outside what the rechunk read are old chunks moved (RechunkTests shows its
    /// cuts are the whole content's), so only those inside are looked up among the old
    /// chunks' hashes.
    static func costs(_ edits: [GeneratedEdit], _ old: [UInt8], _ chunkings: [Chunking], _ side: (Chunking) -> ([Int], Set<SHA256.Digest>)) -> [Int] {
        let new = GeneratedEdit.apply(edits, to: old)
        return chunkings.map { chunking in
            let (oldCuts, known) = side(chunking)
            let rechunk = Chunker.cuts(after: edits.map(\.edit), to: oldCuts, parameters: chunking.parameters) { Array(new[$0]) }
            var bytes = 0
            for (start, end) in zip([0] + rechunk.cuts, rechunk.cuts) where rechunk.read.contains(where: { $0.overlaps(start..<end) }) {
                if !known.contains(SHA256.hash(data: new[start..<end])) { bytes += end - start }
            }
            return bytes
        }
    }

    /// Fixed blocks, as ubiqfs cut files before content-defined chunks: 256 KiB, 768 KiB,
    /// then 4 MiB.
    static func fixedBlocks(_ text: [UInt8], _ pages: [UInt8], _ start: [GeneratedEdit], _ lines: [[GeneratedEdit]], _ pageSets: [[GeneratedEdit]]) -> [String] {
        func blocks(_ length: Int) -> [Int] {
            ([256 << 10, 1 << 20] + Array(stride(from: 5 << 20, to: length, by: 4 << 20))).filter { $0 < length } + [length]
        }
        func cost(_ edits: [GeneratedEdit], _ old: [UInt8]) -> Int {
            let new = GeneratedEdit.apply(edits, to: old)
            return TestContent.newChunks(old: old, oldCuts: blocks(old.count), new: new, newCuts: blocks(new.count)).bytes
        }
        let atStart = cost(start, text)
        return [
            "fixed 4 MiB", "\(blocks(size).count)", mib(atStart) + String(format: " (%.2f%%)", 100 * Double(atStart) / Double(size)),
            mib(lines.reduce(0) { $0 + cost($1, text) } / lines.count), mib(pageSets.reduce(0) { $0 + cost($1, pages) } / pageSets.count), "-",
        ]
    }

    static func mib(_ bytes: Int) -> String {
        String(format: "%.2f MiB", Double(bytes) / 1_048_576)
    }

    static func table(_ rows: [[String]]) -> String {
        let header = [
            "ChunkingMeasureTests: seed \(TestContent.seed), 64 MiB, unkeyed",
            "| average | chunks | line at start (of 64 MiB) | line anywhere (mean of 20) | 10 pages of 4 KiB (mean of 5) | MB/s (this build) |",
            "|---|---|---|---|---|---|",
        ]
        return (header + rows.map { "| " + $0.joined(separator: " | ") + " |" }).joined(separator: "\n")
    }
}
