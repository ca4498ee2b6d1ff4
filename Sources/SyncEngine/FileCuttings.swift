import ContainerCrypto
import ContentChunking
import ItemModel

/// Which cutting a file's content takes: a writer's choice, which readers never depend on.
/// Most files take the container's (`coarse`: leading blocks, then chunks of about 1 MiB),
/// which keeps lists, records and checkpoints short. A file that programs edit in place
/// (a database, a disk image) takes `fine` (chunks of about 32 KiB, no leading blocks), so
/// a page written costs a chunk and not a MiB; in format 5 its record says its list as a
/// splice of the last one (`BlockSplice`), as short as the edit.
struct FileCuttings: Sendable {
    let coarse: BlockCutting
    /// Nil when the container's own chunks are small already (a small `blockSize`).
    let fine: BlockCutting?

    /// Chunks of 8 KiB to 128 KiB around 32 KiB: ten rows changed in a 200 MiB SQLite
    /// database cost 0.58 MiB of new chunks at this size, 1.6 MiB at 64 KiB, 41 MiB with
    /// 4 MiB blocks (`DatabaseChunkingMeasureTests`).
    static let fineAverage = 32 << 10
    /// Larger files stay coarse: a list of 1 GiB in fine chunks (about 29,000 blocks, 4 MiB
    /// of JSON) is what a first record and each checkpoint carry whole. A file cut fine
    /// stays so up to twice that, so one that grows past it and shrinks back is not cut
    /// again whole each time.
    static let fineLimit: Int64 = 1 << 30
    /// The first bytes of an SQLite database: such a file is cut fine from its first upload.
    static let sqliteHeader = Array("SQLite format 3\u{0}".utf8)

    init(info: ContainerInfo, cipher: ContainerCipher?) throws(SyncError) {
        coarse = try BlockCutting(info: info, cipher: cipher)
        fine = coarse.chunking.average >= 4 * Self.fineAverage
            ? try BlockCutting(leading: [], average: Self.fineAverage, cipher: cipher) : nil
    }

    /// Whether `blocks` were cut fine: more than one, the first shorter than a coarse
    /// first block (which a file of more than one block fills).
    func isFine(_ blocks: [BlockReference]) -> Bool {
        guard fine != nil, blocks.count > 1, let first = coarse.leading.first else { return false }
        return blocks[0].length < first
    }

    /// The cutting of a file of `size` bytes starting with `head`, whose committed list is
    /// `committed`, written here inside its committed content (`editedInPlace`:
    /// `WrittenRanges.editsInPlace`) or not. A
    /// file cut fine stays so (every device decides alike from the list); only format 5
    /// says fine lists as splices, so earlier formats cut coarse.
    func cutting(size: Int64, head: [UInt8], committed: [BlockReference], editedInPlace: Bool, format: Int) -> BlockCutting {
        guard let fine, format >= 5 else { return coarse }
        if isFine(committed) { return size <= 2 * Self.fineLimit ? fine : coarse }
        return size <= Self.fineLimit && (editedInPlace || head.starts(with: Self.sqliteHeader)) ? fine : coarse
    }
}
