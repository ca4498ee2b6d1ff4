import Synchronization
import SyncEngine

/// One reader's readahead over a partial file: nothing until it has read 4 MiB in one
/// sequential run, then 4 MiB of blocks ahead, doubling with every further 4 MiB up to
/// `maxWindow` times that; nothing after a seek. Counted in bytes, not blocks: blocks are
/// content-defined chunks of any length up to 4 MiB. So `cat`, `cp` and `sha256sum` soon
/// run at the store's speed, while a program reading a header fetches what it reads and
/// at most 4 MiB more. The window is asked for in batches, once less than half of it is
/// left ahead of the reader, so neighbouring chunks of a pack go in one ranged `GET`.
final class Readahead: Sendable {
    static let maxWindow = 8
    /// The run's bytes per step of the window, and the window's bytes per step.
    static let bytesPerStep: Int64 = 4 << 20

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
            let sequential = offset == state.next
            state.run = sequential ? state.run + Int64(length) : Int64(length)
            state.next = end
            if !sequential { state.through = 0 }
            let read = state.run / Self.bytesPerStep
            guard read > 0 else { return [] }
            let window = Int64(min(Self.maxWindow, 1 << Int(min(3, read - 1)))) * Self.bytesPerStep
            guard state.through - end < window / 2 else { return [] }
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
