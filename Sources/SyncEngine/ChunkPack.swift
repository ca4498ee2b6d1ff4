import ItemModel

/// A pack being filled with one file's new blocks (`ContentUploader`): its bytes, and the
/// reference of each block in it, known as soon as the block is appended (the pack's key
/// is fresh and the offset is where the bytes go), so the manifest never waits for the put.
struct ChunkPack {
    /// A pack is put once it holds this much: one `PUT` for about eight chunks of 1 MiB.
    static let limit = 8 << 20

    let id = ItemID.random().rawValue
    private(set) var bytes: [UInt8] = []
    /// The content bytes of the blocks in it (less than `bytes` once sealed).
    private(set) var content: Int64 = 0

    var isEmpty: Bool { bytes.isEmpty }
    var isFull: Bool { bytes.count >= Self.limit }

    /// Appends a block's stored bytes (sealed alone in an encrypted container) and returns
    /// its reference.
    mutating func append(_ stored: [UInt8], hash: String, length: Int) -> BlockReference {
        let offset = Int64(bytes.count)
        bytes += stored
        content += Int64(length)
        return BlockReference(hash: hash, length: Int64(length), pack: id, offset: offset, stored: stored.count == length ? nil : Int64(stored.count))
    }
}
