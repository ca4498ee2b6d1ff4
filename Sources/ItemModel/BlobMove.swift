/// One packed blob moved by collection (format 2): every reference to blob `hash` in pack
/// `from` names `pack` at `offset` from the record that carries the move on. Records are
/// immutable, so a collector that repacks a pack which is mostly garbage says where its
/// live blobs went with a record (`JournalRecord.relocate`) instead of rewriting items,
/// which would read as edits and make conflict copies on devices editing them meanwhile.
public struct BlobMove: Hashable, Sendable, Codable {
    public var hash: String
    public var length: Int64
    /// The pack the blob leaves (32 lowercase hex).
    public var from: String
    public var pack: String
    public var offset: Int64

    public init(hash: String, length: Int64, from: String, pack: String, offset: Int64) {
        (self.hash, self.length, self.from, self.pack, self.offset) = (hash, length, from, pack, offset)
    }

    /// Names like a block reference's, two different packs, a place in range.
    public var isWellFormed: Bool {
        BlockReference.isHex(hash, count: 64) && BlockReference.isHex(from, count: 32) && BlockReference.isHex(pack, count: 32)
            && from != pack && length >= 0 && length <= RecordValidator.maxSize && offset >= 0 && offset <= RecordValidator.maxSize
    }

    /// Where `block` is after this move, if the move is about it (same blob, same pack).
    public func applied(to block: BlockReference) -> BlockReference? {
        guard block.hash == hash, block.length == length, block.pack == from else { return nil }
        // A repack copies a blob's stored bytes as they are: its stored length stays.
        return BlockReference(hash: hash, length: length, pack: pack, offset: offset, stored: block.stored)
    }

    enum CodingKeys: String, CodingKey {
        case hash = "h"
        case length = "n"
        case from = "f"
        case pack = "p"
        case offset = "o"
    }
}

extension Array where Element == BlockReference {
    /// The same bytes (hashes and lengths in order), wherever they are stored: a relocation
    /// or an inline copy is no new content, no new version and no conflict.
    public func sameContent(as other: [BlockReference]) -> Bool {
        count == other.count && zip(self, other).allSatisfy { $0.hash == $1.hash && $0.length == $1.length }
    }

    /// The references after `moves` (keyed by `BlobMove.key`), and whether any changed.
    public func relocated(by moves: [String: BlobMove]) -> (blocks: [BlockReference], changed: Bool) {
        var changed = false
        let blocks = map { block -> BlockReference in
            guard let pack = block.pack, let moved = moves[BlobMove.key(hash: block.hash, pack: pack)]?.applied(to: block) else { return block }
            changed = true
            return moved
        }
        return (blocks, changed)
    }
}

extension BlobMove {
    /// The table key of a move: the blob and the pack it leaves.
    public var key: String { Self.key(hash: hash, pack: from) }
    public static func key(hash: String, pack: String) -> String { hash + "@" + pack }
}
