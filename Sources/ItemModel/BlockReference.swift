/// One block of a file's content: its name (the SHA-256 of its bytes, 64 lowercase hex)
/// and length, and in a format-2 container, where it is when it shares a pack object with
/// other small files' blocks (`packs/<pack>` from `offset`, `length` bytes).
public struct BlockReference: Hashable, Sendable, Codable {
    public var hash: String
    public var length: Int64
    /// The pack holding the block (32 lowercase hex), or nil for `blocks/<hash>`.
    public var pack: String?
    public var offset: Int64?

    public init(hash: String, length: Int64, pack: String? = nil, offset: Int64? = nil) {
        self.hash = hash
        self.length = length
        self.pack = pack
        self.offset = offset
    }

    /// 64 lowercase hex digits, a length in range, and a pack place that is whole (a
    /// pack of 32 lowercase hex and an offset, or neither): anything else from the store
    /// is refused.
    public var isWellFormed: Bool {
        guard Self.isHex(hash, count: 64), length >= 0, length <= RecordValidator.maxSize else { return false }
        switch (pack, offset) {
        case (nil, nil): return true
        case (let pack?, let offset?): return Self.isHex(pack, count: 32) && offset >= 0 && offset <= RecordValidator.maxSize
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
    }
}
