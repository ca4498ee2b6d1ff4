import Glibc
import Inodes
import ItemModel
import Synchronization

/// One fill of a partial file: the committed version's blocks, which of them are in the
/// cache file, and a descriptor of that file to write fetched blocks into. Readers that
/// opened this version keep it even after the item is evicted or replaced (the descriptor
/// still names the file they read), so they go on reading the version they opened.
public final class PartialContent: Sendable {
    public let ino: Inode
    /// Tells this fill from a later one of the same item (`FetchedBlocks`).
    public let generation: Int64
    public let blocks: [BlockReference]
    /// Where each block starts in the file.
    public let offsets: [Int64]
    public let size: Int64
    /// Read-write, of the cache file this fill writes; closed with the fill.
    public let fd: Int32
    private let present: Mutex<[Bool]>

    init(ino: Inode, generation: Int64, blocks: [BlockReference], fd: Int32, bitmap: [UInt8]) {
        self.ino = ino
        self.generation = generation
        self.blocks = blocks
        var offsets: [Int64] = []
        var total: Int64 = 0
        for block in blocks {
            offsets.append(total)
            total += block.length
        }
        self.offsets = offsets
        self.size = total
        self.fd = fd
        present = Mutex(blocks.indices.map { index in
            index / 8 < bitmap.count && bitmap[index / 8] & (1 << UInt8(index % 8)) != 0
        })
    }

    deinit { close(fd) }

    /// The blocks of this byte range not here yet, in order.
    public func missing(offset: Int64, length: Int) -> [Int] {
        let range = blockRange(offset: offset, length: length)
        return present.withLock { present in range.filter { !present[$0] } }
    }

    /// The indices of the blocks a byte range touches (clamped to the file).
    public func blockRange(offset: Int64, length: Int) -> Range<Int> {
        let end = min(size, offset + Int64(max(0, length)))
        guard offset < end, let first = index(containing: offset) else { return 0..<0 }
        let last = index(containing: end - 1) ?? blocks.count - 1
        return first..<(last + 1)
    }

    /// The block holding byte `offset` (a binary search over the offsets).
    func index(containing offset: Int64) -> Int? {
        guard offset >= 0, offset < size else { return nil }
        var (low, high) = (0, blocks.count - 1)
        while low < high {
            let middle = (low + high + 1) / 2
            if offsets[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return low
    }

    public func isPresent(_ index: Int) -> Bool { present.withLock { $0[index] } }

    public var isComplete: Bool { present.withLock { !$0.contains(false) } }

    /// Bytes here (`user.ubiqfs.progress`).
    public var presentBytes: Int64 {
        present.withLock { present in present.indices.reduce(0) { $0 + (present[$1] ? blocks[$1].length : 0) } }
    }

    /// Marks a block as here (written, maybe not yet durable): readers may read it.
    func markPresent(_ index: Int) {
        present.withLock { $0[index] = true }
    }

    /// The blocks here now, as a bitmap to record, and whether that is all of them.
    func snapshot() -> (bitmap: [UInt8], complete: Bool) {
        present.withLock { present in (Self.bitmap(present), !present.contains(false)) }
    }

    static func bitmap(_ present: [Bool]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: (present.count + 7) / 8)
        for (index, here) in present.enumerated() where here { bytes[index / 8] |= 1 << UInt8(index % 8) }
        return bytes
    }
}
