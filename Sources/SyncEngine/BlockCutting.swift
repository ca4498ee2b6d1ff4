import ContainerCrypto
import ContentChunking
import ItemModel

/// Where ubiqfs cuts a file's content into blocks (docs/CONTAINER-FORMAT.md, "blocks/"):
/// the leading blocks at fixed lengths (a placeholder's first byte, then its first MiB,
/// each come with one short block), then content-defined chunks of about a quarter of the
/// container's block size and at most the block size, so an edit anywhere, an insertion
/// too, changes the blocks around it and the rest are stored already. Readers never
/// depend on it.
struct BlockCutting: Sendable, Hashable {
    /// The fixed lengths of the first blocks.
    let leading: [Int]
    let chunking: ChunkerParameters

    /// The cutting for `info`; in an encrypted container the chunker's table is keyed, so
    /// block lengths say nothing of the content.
    init(info: ContainerInfo, cipher: ContainerCipher?) throws(SyncError) {
        try self.init(leading: info.leadingBlockLengths, average: Self.average(blockSize: info.blockSize), cipher: cipher)
    }

    /// Chunks of `average` after blocks of `leading` lengths.
    init(leading: [Int], average: Int, cipher: ContainerCipher?) throws(SyncError) {
        self.leading = leading
        do {
            chunking = try cipher.map { cipher throws(ChunkingError) in try ChunkerParameters.keyed(cipher.chunkingKey, average: average) }
                ?? ChunkerParameters.unkeyed(average: average)
        } catch {
            throw SyncError(code: .container, message: "cannot chunk content in chunks of \(average) bytes", cause: error)
        }
    }

    /// The largest power of two at most a quarter of `blockSize` (so chunks, at most four
    /// averages, fit in a block), and at least the chunker's smallest.
    static func average(blockSize: Int64) -> Int {
        let quarter = max(Int(blockSize / 4), 1 << ChunkerParameters.averageBits.lowerBound)
        return 1 << (Int.bitWidth - 1 - quarter.leadingZeroBitCount)
    }

    /// The ends of the blocks of `bytes` held whole (an edit kept for a merge): the same
    /// blocks as a file of those bytes streamed from disk (`BlockSource`).
    func cuts(of bytes: [UInt8]) -> [Int] {
        var cuts: [Int] = []
        var offset = 0
        for length in leading where offset < bytes.count {
            offset = min(offset + length, bytes.count)
            cuts.append(offset)
        }
        guard offset < bytes.count else { return cuts }
        var chunker = Chunker(parameters: chunking, offset: offset)
        cuts += chunker.append(bytes[offset...])
        if let last = chunker.finish() { cuts.append(last) }
        return cuts
    }
}
