@testable import CloudFileSystem
import Glibc
import ItemModel
@testable import SyncEngine
import Testing

/// Readahead counts bytes, not blocks: past the first MiB a file is content-defined chunks
/// of any length, so the window is 4 MiB of blocks once 4 MiB were read, doubling with
/// every further 4 MiB up to 32 MiB, and nothing after a seek. With blocks counted instead
/// (the old rule), chunks of 1 MiB would get a quarter of that.
@Suite struct ReadaheadTests {
    static func partial(_ lengths: [Int]) -> PartialContent {
        let blocks = lengths.enumerated().map { BlockReference(hash: String(repeating: "0", count: 63) + String($0.offset % 10), length: Int64($0.element)) }
        return PartialContent(ino: 7, generation: 1, blocks: blocks, fd: open("/dev/null", O_RDONLY), bitmap: [])
    }

    /// The bytes of the blocks fetched ahead after reading `upTo` bytes sequentially, in
    /// reads of 128 KiB.
    static func ahead(after upTo: Int64, _ partial: PartialContent, _ readahead: Readahead) -> Int64 {
        var offset: Int64 = 0
        var fetched: [Int] = []
        while offset < upTo {
            fetched = readahead.blocks(after: offset, length: 128 << 10, in: partial)
            offset += 128 << 10
        }
        return fetched.reduce(0) { $0 + partial.blocks[$1].length }
    }

    @Test func theWindowIsInBytesWhateverTheBlocks() {
        for chunk in [1 << 20, 3 << 20, 4 << 20] {
            let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: chunk, count: 200 << 20 / chunk))
            for (read, window) in [(2 << 20, 0), (4 << 20, 4 << 20), (8 << 20, 8 << 20), (12 << 20, 16 << 20), (16 << 20, 32 << 20), (40 << 20, 32 << 20)] {
                let fetched = Self.ahead(after: Int64(read), partial, Readahead())
                // The blocks that reach the window: at least it, less than a block more.
                #expect(fetched >= Int64(window) && fetched < Int64(window + chunk), "chunks of \(chunk >> 20) MiB, \(read >> 20) MiB read: \(fetched >> 20) MiB ahead")
            }
        }
    }

    @Test func aSeekStopsIt() {
        let partial = Self.partial([256 << 10, 768 << 10] + Array(repeating: 1 << 20, count: 64))
        let readahead = Readahead()
        #expect(Self.ahead(after: 8 << 20, partial, readahead) >= 8 << 20)
        #expect(readahead.blocks(after: 40 << 20, length: 128 << 10, in: partial).isEmpty)
    }
}
