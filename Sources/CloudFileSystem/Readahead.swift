import Synchronization
import SyncEngine

/// One reader's readahead over a partial file: nothing until it has read one full block's
/// worth (4 MiB) in one sequential run, then one block ahead, doubling with every further
/// 4 MiB up to `maxWindow`; nothing after a seek. So `cat`, `cp` and `sha256sum` soon run
/// at the store's speed, while a program reading a header fetches what it reads and at
/// most one block more.
final class Readahead: Sendable {
    static let maxWindow = 8
    /// The run's bytes per block of window: the size of a full block.
    static let bytesPerBlock: Int64 = 4 << 20

    private struct State {
        /// Where the next sequential read starts.
        var next: Int64 = -1
        /// Bytes read sequentially since the last seek.
        var run: Int64 = 0
    }

    private let state = Mutex(State())

    /// The blocks to fetch ahead of this read (not here yet).
    func blocks(after offset: Int64, length: Int, in partial: PartialContent) -> [Int] {
        let range = partial.blockRange(offset: offset, length: length)
        guard let last = range.last else { return [] }
        let window = state.withLock { state in
            state.run = offset == state.next ? state.run + Int64(length) : Int64(length)
            state.next = offset + Int64(length)
            let blocksRead = state.run / Self.bytesPerBlock
            return blocksRead == 0 ? 0 : min(Self.maxWindow, 1 << Int(min(3, blocksRead - 1)))
        }
        guard window > 0 else { return [] }
        return (last + 1..<min(partial.blocks.count, last + 1 + window)).filter { !partial.isPresent($0) }
    }
}
