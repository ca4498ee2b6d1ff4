@testable import CloudFileSystem
import Glibc
import ItemModel
@testable import SyncEngine
import Testing

/// Readahead counts bytes, not blocks (past the first MiB a file is content-defined chunks
/// of any length): once 512 KiB were read in a run (or at once 256 KiB), a window of 8 bytes per byte read, from
/// 8 MiB up to 64 MiB, bounds the bytes in flight, and two windows how far ahead of the
/// reader blocks are asked; nothing after a seek. Batches are asked as reads come and as
/// earlier batches arrive, so a store that answers keeps the window full without waiting for
/// the reader (over a far store, parallel requests finish together, and a reader-driven
/// readahead idled the link a round trip per window), and each ends where a pack does.
@Suite struct ReadaheadTests {
    static func partial(_ lengths: [Int], packs: [String?]? = nil) -> PartialContent {
        var blocks: [BlockReference] = []
        var offset: Int64 = 0
        for (index, length) in lengths.enumerated() {
            let pack = packs?[index]
            if index > 0 && pack != packs?[index - 1] { offset = 0 }
            let hash = String(repeating: "0", count: 63) + String(index % 10)
            blocks.append(BlockReference(hash: hash, length: Int64(length), pack: pack, offset: pack == nil ? nil : offset))
            offset += Int64(length)
        }
        return PartialContent(ino: 7, generation: 1, blocks: blocks, fd: open("/dev/null", O_RDONLY), bitmap: [])
    }

    /// The window after `read` bytes read in one run.
    static func window(after read: Int64) -> Int64 {
        read < Readahead.start ? 0 : min(Readahead.maxWindow, max(Readahead.firstWindow, read * Readahead.growth))
    }

    /// Reads `upTo` bytes sequentially in reads of 128 KiB; a store that `answers` delivers
    /// every batch at once (asking for the next ones), one that does not never delivers.
    /// Returns how far past the reader blocks were asked for, and the bytes in flight.
    static func read(upTo: Int64, _ partial: PartialContent, _ readahead: Readahead, answers: Bool) -> (ahead: Int64, inFlight: Int64) {
        var (offset, through, inFlight) = (Int64(0), Int64(0), Int64(0))
        func note(_ batch: Readahead.Batch) {
            inFlight += batch.bytes
            if let last = batch.blocks.last { through = partial.offsets[last] + partial.blocks[last].length }
        }
        while offset < upTo {
            var batch = readahead.blocks(after: offset, length: 128 << 10, in: partial)
            offset += 128 << 10
            note(batch)
            while answers && !batch.isEmpty {
                inFlight -= batch.bytes
                batch = readahead.arrived(batch, fetched: true, in: partial)
                note(batch)
            }
        }
        return (max(0, through - upTo), inFlight)
    }

    @Test func theWindowIsInBytesWhateverTheBlocks() {
        #expect(Self.window(after: 8 << 20) == Readahead.maxWindow)
        for chunk in [1 << 20, 3 << 20, 4 << 20] {
            let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: chunk, count: 200 << 20 / chunk))
            for read in [256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 40 << 20] {
                let (window, chunk) = (Self.window(after: Int64(read)), Int64(chunk))
                // A store that answers: two windows ahead of the reader, less a quarter window
                // (batches are no smaller) and a block.
                let answered = Self.read(upTo: Int64(read), partial, Readahead(), answers: true)
                #expect(answered.ahead >= 2 * window - window / 4 - chunk && answered.ahead < 2 * window + chunk,
                        "chunks of \(chunk >> 20) MiB, \(read >> 20) MiB read: \(answered.ahead >> 20) MiB ahead")
                // A store that does not: at most a window (and a block) in flight.
                let stalled = Self.read(upTo: Int64(read), partial, Readahead(), answers: false)
                #expect(stalled.inFlight <= window + chunk, "chunks of \(chunk >> 20) MiB, \(read >> 20) MiB read: \(stalled.inFlight >> 20) MiB in flight")
                if window > 0 { #expect(stalled.inFlight >= window * 3 / 4) }
            }
        }
    }

    /// The next batch leaves when one arrives, not when the reader reads on.
    @Test func anArrivalAsksForMoreWithoutARead() {
        let partial = Self.partial(Array(repeating: 1 << 20, count: 256))
        let readahead = Readahead()
        let window = Readahead.maxWindow
        var batches: [Readahead.Batch] = []
        for offset in stride(from: Int64(0), to: 8 << 20, by: 128 << 10) {
            let batch = readahead.blocks(after: offset, length: 128 << 10, in: partial)
            if !batch.isEmpty { batches.append(batch) }
        }
        let asked = batches.reduce(0) { $0 + $1.bytes }
        #expect(asked >= window * 3 / 4 && asked <= window + (1 << 20), "a window in flight: \(asked >> 20) MiB")
        // The reader waits at 8 MiB while the first batches arrive: once less than three
        // quarters of the window are in flight, it is filled again, from where the asked
        // blocks end.
        var (arrived, next, waiting) = (Int64(0), Readahead.Batch(), batches[...])
        while next.isEmpty, let batch = waiting.popFirst() {
            arrived += batch.bytes
            next = readahead.arrived(batch, fetched: true, in: partial)
        }
        let inFlight = asked - arrived + next.bytes
        #expect(asked - arrived < window * 3 / 4 && inFlight >= window - (1 << 20) && inFlight <= window + (1 << 20),
                "\(arrived >> 20) MiB in, \(next.bytes >> 20) MiB asked again")
        let end = batches.last.flatMap { $0.blocks.last }.map { partial.offsets[$0] + partial.blocks[$0].length }
        #expect(next.blocks.first.map { partial.offsets[$0] } == end)
        // Failed batches free the window and ask nothing: the reader's next read asks again,
        // from the first block that failed past it.
        #expect(readahead.arrived(next, fetched: false, in: partial).isEmpty)
        #expect(waiting.count >= 2, "batches still in flight")
        for batch in waiting { #expect(readahead.arrived(batch, fetched: false, in: partial).isEmpty) }
        let again = readahead.blocks(after: 8 << 20, length: 128 << 10, in: partial)
        let readTo = Int64(8 << 20) + (128 << 10)
        let failedAhead = waiting.flatMap(\.blocks).first { partial.offsets[$0] + partial.blocks[$0].length > readTo }
        #expect(failedAhead != nil && again.blocks.first == failedAhead)
    }

    /// A batch takes the rest of the pack its last block lies in, so a pack comes in one
    /// ranged `GET`; the same blocks unpacked end where the window does (the control).
    @Test func aBatchEndsWhereAPackDoes() {
        let lengths = [256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 100)
        let packs: [String?] = [nil, nil] + (0..<100).map { "p\($0 / 10)" }
        for packed in [true, false] {
            let partial = Self.partial(lengths, packs: packed ? packs : nil)
            let readahead = Readahead()
            var ends: [Int] = []
            for offset in stride(from: Int64(0), to: 16 << 20, by: 128 << 10) {
                var batch = readahead.blocks(after: offset, length: 128 << 10, in: partial)
                while let last = batch.blocks.last {
                    ends.append(last)
                    batch = readahead.arrived(batch, fetched: true, in: partial)
                }
            }
            // Blocks 2... lie in packs of ten.
            let atPackEnds = ends.filter { $0 + 1 == lengths.count || ($0 - 1) % 10 == 0 }
            #expect(ends.count >= 3)
            #expect((atPackEnds.count == ends.count) == packed, "packed \(packed): batches end at blocks \(ends)")
        }
    }

    @Test func aClosedHandleAsksNothingMore() {
        let partial = Self.partial(Array(repeating: 1 << 20, count: 128))
        let readahead = Readahead()
        var first = Readahead.Batch()
        for offset in stride(from: Int64(0), to: 1 << 20, by: 128 << 10) where first.isEmpty {
            first = readahead.blocks(after: offset, length: 128 << 10, in: partial)
        }
        #expect(!first.isEmpty)
        readahead.stop()
        #expect(readahead.arrived(first, fetched: true, in: partial).isEmpty)
        #expect(readahead.blocks(after: 1 << 20, length: 128 << 10, in: partial).isEmpty)
    }

    @Test func aSeekStopsIt() {
        let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 64))
        let readahead = Readahead()
        #expect(Self.read(upTo: 8 << 20, partial, readahead, answers: true).ahead >= 4 << 20)
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
                asked += readahead.blocks(after: offset, length: 128 << 10, in: partial).blocks.count
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

    /// A first read of 256 KiB through the page cache is the kernel's readahead for a program
    /// that said it reads on (`cat`, `cp`): the window opens with it, not a round trip later. The kernel's own
    /// 128 KiB reads (`file`, `head`, a thumbnailer) still fetch only what they read, also
    /// when they jump about the file.
    @Test func aReaderThatSaidItReadsOnHasItsWindowAtOnce() {
        let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 64))
        let cat = Readahead().blocks(after: 0, length: Int(Readahead.readingOn), in: partial)
        #expect(cat.bytes >= Readahead.firstWindow, "asked at the first read: \(cat.bytes)")
        let file = Readahead()
        for offset: Int64 in [0, 128 << 10, 4 << 20, 40 << 20, 60 << 20] {
            #expect(file.blocks(after: offset, length: 128 << 10, in: partial).isEmpty)
        }
        // Only a first read says so: a large read after a seek fetches what it reads, and
        // so does an O_DIRECT one, whose size is the program's own.
        let seeking = Readahead()
        #expect(seeking.blocks(after: 0, length: 128 << 10, in: partial).isEmpty)
        #expect(seeking.blocks(after: 30 << 20, length: Int(Readahead.readingOn), in: partial).isEmpty)
        let direct = Readahead(pageCached: false)
        #expect(direct.blocks(after: 0, length: Int(Readahead.readingOn), in: partial).isEmpty)
    }
}
