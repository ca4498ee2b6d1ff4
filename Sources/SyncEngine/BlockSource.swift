import ContentChunking
import Inodes
import ItemModel

/// A local file read block by block as `BlockCutting` cuts it, for an upload: the leading
/// blocks read at their lengths, then the rest in pieces through the chunker, each block
/// handed out once its cut is found. It holds at most a piece and a block.
struct BlockSource {
    enum Step {
        case block([UInt8])
        /// A block the store has (a committed one, unchanged): named, not read.
        case stored(BlockReference)
        /// The content ended: every block was handed out.
        case end
        /// The file is gone.
        case deleted
    }

    /// How much is read at once past the leading blocks.
    static let piece = 1 << 20

    let reader: LocalContentReader
    let ino: Inode
    let fd: Int32
    let name: String
    let cutting: BlockCutting
    private var index = 0
    /// The offset of the next block's first byte.
    private var offset = 0
    private var chunker: Chunker?
    /// Bytes read from `offset` on, and the cuts found in them.
    private var buffered: ArraySlice<UInt8> = []
    private var cuts: [Int] = []
    private var atEnd = false

    init(reader: LocalContentReader, ino: Inode, fd: Int32, name: String, cutting: BlockCutting) {
        (self.reader, self.ino, self.fd, self.name, self.cutting) = (reader, ino, fd, name, cutting)
    }

    mutating func next() async throws(SyncError) -> Step {
        if index < cutting.leading.count {
            guard !atEnd else { return .end }
            let wanted = cutting.leading[index]
            index += 1
            guard let bytes = try await reader.read(ino, fd: fd, count: wanted, at: Int64(offset), name: name) else { return .deleted }
            offset += bytes.count
            atEnd = bytes.count < wanted
            return bytes.isEmpty ? .end : .block(bytes)
        }
        while cuts.isEmpty {
            var chunker = self.chunker ?? Chunker(parameters: cutting.chunking, offset: offset)
            defer { self.chunker = chunker }
            if atEnd {
                guard let last = chunker.finish() else { return .end }
                cuts.append(last)
                break
            }
            guard let piece = try await reader.read(ino, fd: fd, count: Self.piece, at: Int64(offset + buffered.count), name: name) else { return .deleted }
            buffered += piece
            cuts += chunker.append(piece)
            atEnd = piece.count < Self.piece
        }
        let length = cuts.removeFirst() - offset
        let block = Array(buffered.prefix(length))
        buffered = buffered.dropFirst(length)
        offset += length
        return .block(block)
    }
}
