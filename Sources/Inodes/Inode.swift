/// An item's number on this device, the one type for it from the kernel's requests to the
/// state database: the row id of `item` (stable across remounts, never reused), the key of
/// its leases, the name of its cache file. 1 is the root. A leaf module, so FuseKit and the
/// coordinator can share it without knowing anything else of ubiqfs.
public struct Inode: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { rawValue = value }
    public init(integerLiteral value: UInt64) { rawValue = value }

    /// From SQLite's signed row id (always positive for an inode).
    public init(_ rowID: Int64) { rawValue = UInt64(bitPattern: rowID) }

    /// As SQLite stores it.
    public var rowID: Int64 { Int64(bitPattern: rawValue) }

    public static let root: Inode = 1

    public var description: String { String(rawValue) }

    public static func < (lhs: Inode, rhs: Inode) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Encoded as a bare number, as the inode numbers of earlier versions were.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
