import Synchronization
import SyncEngine

/// One reader's readahead over a partial file: a window of blocks fetched ahead of its
/// reads that doubles each time a sequential reader enters a new block (up to `maxWindow`
/// blocks) and closes when it seeks. So `cat`, `cp` and `sha256sum` run at the store's
/// speed, while `file` or a thumbnailer reading a header fetches the first block alone.
final class Readahead: Sendable {
    static let maxWindow = 8

    private struct State {
        /// Where the next sequential read starts.
        var next: Int64 = -1
        var window = 0
        /// The last block this reader reached.
        var block = -1
    }

    private let state = Mutex(State())

    /// The blocks to fetch ahead of this read (not here yet).
    func blocks(after offset: Int64, length: Int, in partial: PartialContent) -> [Int] {
        let range = partial.blockRange(offset: offset, length: length)
        guard let last = range.last else { return [] }
        let window = state.withLock { state in
            if offset != state.next {
                state.window = 0
            } else if last > state.block {
                state.window = min(max(1, state.window * 2), Self.maxWindow)
            }
            state.next = offset + Int64(length)
            state.block = last
            return state.window
        }
        guard window > 0 else { return [] }
        return (last + 1..<min(partial.blocks.count, last + 1 + window)).filter { !partial.isPresent($0) }
    }
}
