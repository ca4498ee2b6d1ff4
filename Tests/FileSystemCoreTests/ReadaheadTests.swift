@testable import CloudFileSystem
import Glibc
import ItemModel
@testable import SyncEngine
import Testing

/// Readahead counts bytes, not blocks: past the first MiB a file is content-defined chunks
/// of any length, so the window is 4 MiB of blocks once 512 KiB were read, doubling with
/// every further 4 MiB up to 32 MiB, and nothing after a seek; reads that arrive out of
/// order by less than 2 MiB (the kernel's own readahead) are no seek. With blocks counted instead
/// (the old rule), chunks of 1 MiB would get a quarter of that. The window is asked for in
/// batches of at least a quarter of it, so neighbouring chunks of a pack share a ranged
/// `GET`.
@Suite struct ReadaheadTests {
    static func partial(_ lengths: [Int]) -> PartialContent {
        let blocks = lengths.enumerated().map { BlockReference(hash: String(repeating: "0", count: 63) + String($0.offset % 10), length: Int64($0.element)) }
        return PartialContent(ino: 7, generation: 1, blocks: blocks, fd: open("/dev/null", O_RDONLY), bitmap: [])
    }

    /// After reading `upTo` bytes sequentially in reads of 128 KiB: the bytes asked for
    /// ahead of the reader (from the end of its last read to the end of the last block asked
    /// for), and the smallest batch asked for once the window was at its size now.
    static func ahead(after upTo: Int64, _ partial: PartialContent, _ readahead: Readahead) -> (ahead: Int64, smallestBatch: Int64?) {
        var (offset, through) = (Int64(0), Int64(0))
        var batches: [(at: Int64, bytes: Int64)] = []
        while offset < upTo {
            let batch = readahead.blocks(after: offset, length: 128 << 10, in: partial)
            offset += 128 << 10
            guard let last = batch.last else { continue }
            batches.append((offset, batch.reduce(0) { $0 + partial.blocks[$1].length }))
            through = partial.offsets[last] + partial.blocks[last].length
        }
        let windowSince = upTo >= 12 << 20 ? 12 << 20 : max(512 << 10, upTo / (4 << 20) * (4 << 20))
        return (max(0, through - upTo), batches.filter { $0.at > windowSince }.map(\.bytes).min())
    }

    @Test func theWindowIsInBytesWhateverTheBlocks() {
        for chunk in [1 << 20, 3 << 20, 4 << 20] {
            let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: chunk, count: 200 << 20 / chunk))
            for (read, window) in [(256 << 10, 0), (1 << 20, 4 << 20), (4 << 20, 8 << 20), (8 << 20, 16 << 20), (12 << 20, 32 << 20), (40 << 20, 32 << 20)] {
                let (ahead, smallest) = Self.ahead(after: Int64(read), partial, Readahead())
                // Between three quarters of the window and the window, and less than a block more.
                #expect(ahead >= Int64(window * 3 / 4) && ahead < Int64(window + chunk), "chunks of \(chunk >> 20) MiB, \(read >> 20) MiB read: \(ahead >> 20) MiB ahead")
                if let smallest { #expect(smallest >= Int64(window / 4), "chunks of \(chunk >> 20) MiB, \(read >> 20) MiB read: a batch of \(smallest) bytes") }
            }
        }
    }

    @Test func aSeekStopsIt() {
        let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 64))
        let readahead = Readahead()
        #expect(Self.ahead(after: 8 << 20, partial, readahead).ahead >= 4 << 20)
        #expect(readahead.blocks(after: 40 << 20, length: 128 << 10, in: partial).isEmpty)
    }

    /// The kernel's readahead sends reads at once, which arrive in any order: a run read
    /// so still gets its window, and a header read fetches nothing ahead.
    @Test func readsOutOfOrderAreStillARun() {
        let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 64))
        let readahead = Readahead()
        var asked = 0
        for group in stride(from: Int64(0), to: 8 << 20, by: 512 << 10) {
            for offset in [group + (384 << 10), group, group + (256 << 10), group + (128 << 10)] {
                asked += readahead.blocks(after: offset, length: 128 << 10, in: partial).count
            }
        }
        #expect(asked >= 8, "the window's blocks were asked for: \(asked)")
        let header = Readahead()
        #expect(header.blocks(after: 0, length: 64 << 10, in: partial).isEmpty)
        #expect(header.blocks(after: 64 << 10, length: 64 << 10, in: partial).isEmpty)
        // Reading one region again and again is no run.
        let again = Readahead()
        for _ in 0..<100 { #expect(again.blocks(after: 0, length: 128 << 10, in: partial).isEmpty) }
    }
}
