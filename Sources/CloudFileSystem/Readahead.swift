import Synchronization
import SyncEngine

/// One reader's readahead over a partial file: nothing until it has read 512 KiB in one
/// sequential run (a program reading a header fetches what it reads), or 256 KiB in its
/// first read through the page cache (the kernel's readahead for a program that said it
/// reads on), then a window that
/// grows with the run, `growth` bytes per byte read, from 8 MiB up to `maxWindow`; nothing
/// after a seek (of more than `jitter`). Counted in bytes, not blocks: blocks are
/// content-defined chunks of any length. A reader that stops has at most two windows
/// fetched past where it stopped, and the rest of a pack: 16 MiB after a read of 1 MiB,
/// 128 MiB at most.
///
/// The window bounds the bytes in flight (asked, not here yet), and `reachFactor` windows
/// bound how far ahead of the reader blocks are asked for. Batches are asked as a read
/// comes and as the blocks of earlier ones arrive (`arrived`, block by block), each once
/// less than three quarters of the window is in flight, and each to the end of the pack
/// its last block lies in, so a pack comes in one ranged `GET`. Over a far store, parallel
/// requests share the link and finish together; were the reader's position the only
/// trigger, the next requests would leave only once the first block of the window was in,
/// and the link would idle a round trip per window. Over a store 50 ms away, 64 MiB in
/// flight is what keeps a link of a few hundred MB/s busy (PERFORMANCE.md).
final class Readahead: Sendable {
    static let maxWindow: Int64 = 64 << 20
    static let firstWindow: Int64 = 8 << 20
    static let reachFactor: Int64 = 2
    static let growth: Int64 = 8
    /// What a run reads before it has a window: more than a header.
    static let start: Int64 = 512 << 10
    /// A first read this large through the page cache is the kernel reading ahead for a
    /// program that said it reads on (`posix_fadvise` SEQUENTIAL, as `cat` and `cp` say,
    /// doubles the kernel's 128 KiB).
    static let readingOn: Int64 = 256 << 10
    /// The kernel sends the reads of its own readahead at once, and they arrive here in
    /// any order: a read that starts this close to where the run reads on continues it.
    static let jitter: Int64 = 2 << 20

    /// Blocks asked for together, and their bytes (what arrives when they are in).
    struct Batch: Sendable {
        var blocks: [Int] = []
        var bytes: Int64 = 0
        var isEmpty: Bool { blocks.isEmpty }
    }

    private struct State {
        /// Where the next sequential read starts.
        var next: Int64 = -1
        /// Bytes read sequentially since the last seek.
        var run: Int64 = 0
        /// Where the blocks asked for ahead end.
        var through: Int64 = 0
        /// Bytes asked for that have not arrived.
        var inFlight: Int64 = 0
        /// The handle is closed: nothing more is asked.
        var stopped = false

        var window: Int64 { min(Readahead.maxWindow, max(Readahead.firstWindow, run * Readahead.growth)) }
    }

    private let state = Mutex(State())
    /// Reads come through the page cache, sized by the kernel's readahead; with `O_DIRECT`
    /// each is the program's own size, which says nothing of what it reads next.
    private let pageCached: Bool

    init(pageCached: Bool = true) {
        self.pageCached = pageCached
    }

    /// The blocks to fetch ahead of this read (not here yet).
    func blocks(after offset: Int64, length: Int, in partial: PartialContent) -> Batch {
        let end = offset + Int64(length)
        return state.withLock { state -> Batch in
            let first = state.next < 0
            let sequential = state.next >= 0 && abs(offset - state.next) <= Self.jitter
            // Only progress counts: reading a region again does not grow the window.
            state.run = sequential ? state.run + max(0, end - state.next) : Int64(length)
            // Such a reader's window opens at its first read, a round trip earlier.
            if first && pageCached && Int64(length) >= Self.readingOn { state.run = max(state.run, Self.start) }
            state.next = sequential ? max(state.next, end) : end
            if !sequential { state.through = 0 }
            return Self.batch(&state, from: max(end, state.through), in: partial)
        }
    }

    /// A batch, or one block of it, is in or failed: then it only stops being in flight,
    /// and the reader's next read asks for it again. Returns the next batch to ask for, if
    /// the window has room.
    func arrived(_ batch: Batch, fetched: Bool, in partial: PartialContent) -> Batch {
        state.withLock { state -> Batch in
            state.inFlight = max(0, state.inFlight - batch.bytes)
            guard fetched else {
                // Asked again from there by the next read or the next batch that arrives (the
                // store answers again), not now. Blocks behind the reader (a seek since) are
                // the reader's business.
                if let first = batch.blocks.first(where: { partial.offsets[$0] + partial.blocks[$0].length > state.next }) {
                    state.through = min(state.through, partial.offsets[first])
                }
                return Batch()
            }
            guard state.through > 0 else { return Batch() }
            return Self.batch(&state, from: max(state.through, state.next), in: partial)
        }
    }

    /// The handle is closed: batches in flight finish, no more are asked.
    func stop() {
        state.withLock { $0.stopped = true }
    }

    private static func batch(_ state: inout State, from start: Int64, in partial: PartialContent) -> Batch {
        guard !state.stopped, state.run >= Self.start, state.next >= 0 else { return Batch() }
        let window = state.window
        guard state.inFlight < window * 3 / 4 else { return Batch() }
        let limit = min(state.next + window * Self.reachFactor, start + window - state.inFlight)
        // Near the reach, a batch waits to be a quarter window (or the rest of the file).
        guard limit - start >= window / 4 || limit >= partial.size else { return Batch() }
        var batch = Batch()
        var index = partial.blockRange(offset: start, length: 1).first ?? partial.blocks.count
        // A block the last batch ended inside of was asked for with it.
        if index < partial.blocks.count && partial.offsets[index] < state.through { index += 1 }
        while index < partial.blocks.count && (partial.offsets[index] < limit || Self.continuesPack(index, partial)) {
            if !partial.isPresent(index) {
                batch.blocks.append(index)
                batch.bytes += partial.blocks[index].length
            }
            state.through = partial.offsets[index] + partial.blocks[index].length
            index += 1
        }
        state.inFlight += batch.bytes
        return batch
    }

    /// The block lies in the same pack as the one before it: a batch takes it too.
    private static func continuesPack(_ index: Int, _ partial: PartialContent) -> Bool {
        guard index > 0, let pack = partial.blocks[index].pack else { return false }
        return partial.blocks[index - 1].pack == pack
    }
}
