/// The identity of an item across devices and renames (a path is not an identity:
/// moves keep the id, so placeholders move without downloads and history follows the item).
public struct ItemID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The container's root folder has this fixed id on every device.
    public static let root = ItemID("root")

    /// 128 random bits in hex: unique without coordination between devices.
    public static func random() -> ItemID {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return ItemID(hex(high) + hex(low))
    }

    /// Ids come from the store too, so only these shapes are accepted.
    public var isWellFormed: Bool {
        if self == .root { return true }
        return rawValue.utf8.count == 32 && rawValue.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    public var description: String { rawValue }

    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
