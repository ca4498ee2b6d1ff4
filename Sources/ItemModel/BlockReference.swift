import Foundation

/// One block of a file's content: its name (the SHA-256 of its bytes, 64 lowercase hex)
/// and length, and in a format-2 container where it is when it is not `blocks/<hash>`:
/// inside the record itself (`inline`, a file of at most 1 KiB), or in a pack object shared
/// with other small files' blocks (`packs/<pack>` from `offset`, `length` bytes).
public struct BlockReference: Hashable, Sendable, Codable {
    public var hash: String
    public var length: Int64
    /// The pack holding the block (32 lowercase hex), or nil for `blocks/<hash>`.
    public var pack: String?
    public var offset: Int64?
    /// A packed blob's length in its pack when it differs from `length` (encrypted: sealed
    /// and padded); what a ranged read of it asks for.
    public var stored: Int64?
    /// The block's bytes, carried in the record: no object is written or read for it.
    public var inline: Data?

    /// Files up to this size travel inside their record (format 2). Larger inline content
    /// would make checkpoints carry whole trees of content.
    public static let inlineLimit = 1024

    public init(hash: String, length: Int64, pack: String? = nil, offset: Int64? = nil, stored: Int64? = nil, inline: Data? = nil) {
        self.hash = hash
        self.length = length
        self.pack = pack
        self.offset = offset
        self.stored = stored
        self.inline = inline
    }

    /// Bytes the blob takes in its object.
    public var storedLength: Int64 { stored ?? length }

    /// 64 lowercase hex digits, a length in range, and one place that is whole: a pack of
    /// 32 lowercase hex and an offset, or inline bytes of exactly `length` (at most
    /// `inlineLimit`), or neither. Anything else from the store is refused. (Whether the
    /// bytes match the hash is checked where they are served, as for every block.)
    public var isWellFormed: Bool {
        guard Self.isHex(hash, count: 64), length >= 0, length <= RecordValidator.maxSize else { return false }
        switch (pack, offset, inline) {
        case (nil, nil, nil): return stored == nil
        case (let pack?, let offset?, nil):
            return Self.isHex(pack, count: 32) && offset >= 0 && offset <= RecordValidator.maxSize
                && (stored.map { $0 >= 0 && $0 <= RecordValidator.maxSize } ?? true)
        case (nil, nil, let bytes?): return bytes.count == length && length <= Self.inlineLimit && stored == nil
        default: return false
        }
    }

    static func isHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    enum CodingKeys: String, CodingKey {
        case hash = "h"
        case length = "n"
        case pack = "p"
        case offset = "o"
        case stored = "s"
        case inline = "d"
    }
}
