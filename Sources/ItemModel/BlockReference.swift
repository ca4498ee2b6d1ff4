/// One content block of a file version: its SHA-256 (hex) names it in the store
/// (`blocks/<hash>`), so identical blocks are stored once and every download is verified.
public struct BlockReference: Hashable, Sendable, Codable {
    public var hash: String
    public var length: Int64

    public init(hash: String, length: Int64) {
        self.hash = hash
        self.length = length
    }

    /// 64 lowercase hex digits: anything else from the store is refused.
    public var isWellFormed: Bool {
        hash.utf8.count == 64 && hash.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            && length >= 0 && length <= RecordValidator.maxSize
    }

    enum CodingKeys: String, CodingKey {
        case hash = "h"
        case length = "n"
    }
}
