import Synchronization
import SyncEngine

/// One reader's readahead over a partial file: nothing until it has read 512 KiB in one
/// sequential run, then 4 MiB of blocks ahead, doubling with every further 4 MiB up to
/// `maxWindow` times that; nothing after a seek (of more than `jitter`). Counted in
/// bytes, not blocks: blocks are content-defined chunks of any length up to 4 MiB. So
/// `cat`, `cp` and `sha256sum` soon run at the store's speed (over a far store, each
/// block waited for alone is a round trip), while a program reading a header fetches what
/// it reads, and one reading on past its first 512 KiB at most 4 MiB more. The window is
/// asked for in batches of a quarter of it or more, once less than three quarters are
/// left ahead of the reader: so neighbouring chunks of a pack go in one ranged `GET`, and
/// over a far store the next requests leave before those in flight are in (with
/// half-window batches, the reader caught up and waited a round trip for each).
final class Readahead: Sendable {
    static let maxWindow = 8
    /// The run's bytes per step of the window, and the window's bytes per step.
    static let bytesPerStep: Int64 = 4 << 20
    /// What a run reads before it has a window: more than a header.
    static let start: Int64 = 512 << 10
    /// The kernel sends the reads of its own readahead at once, and they arrive here in
    /// any order: a read that starts this close to where the run reads on continues it.
    static let jitter: Int64 = 2 << 20

    private struct State {
        /// Where the next sequential read starts.
        var next: Int64 = -1
        /// Bytes read sequentially since the last seek.
        var run: Int64 = 0
        /// Where the blocks asked for ahead end.
        var through: Int64 = 0
    }

    private let state = Mutex(State())

    /// The blocks to fetch ahead of this read (not here yet).
    func blocks(after offset: Int64, length: Int, in partial: PartialContent) -> [Int] {
        let range = partial.blockRange(offset: offset, length: length)
        guard let last = range.last else { return [] }
        let end = offset + Int64(length)
        return state.withLock { state -> [Int] in
            let sequential = state.next >= 0 && abs(offset - state.next) <= Self.jitter
            // Only progress counts: reading a region again does not grow the window.
            state.run = sequential ? state.run + max(0, end - state.next) : Int64(length)
            state.next = sequential ? max(state.next, end) : end
            if !sequential { state.through = 0 }
            guard state.run >= Self.start else { return [] }
            let steps = state.run / Self.bytesPerStep
            let window = Int64(min(Self.maxWindow, 1 << Int(min(3, steps)))) * Self.bytesPerStep
            guard state.through - end < window * 3 / 4 else { return [] }
            // From the first block not asked for yet to the one that reaches the window.
            var index = last + 1
            while index < partial.blocks.count && partial.offsets[index] + partial.blocks[index].length <= state.through { index += 1 }
            var ahead: [Int] = []
            while index < partial.blocks.count && partial.offsets[index] < end + window {
                if !partial.isPresent(index) { ahead.append(index) }
                state.through = partial.offsets[index] + partial.blocks[index].length
                index += 1
            }
            return ahead
        }
    }
}
