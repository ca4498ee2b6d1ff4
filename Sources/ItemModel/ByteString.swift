import Foundation

/// A name or symlink target as Linux sees it: any bytes. Encoded in JSON as a plain
/// string when it is valid UTF-8 (the common case, readable by people and other
/// clients) and as `{"base64": "..."}` otherwise, so nothing is lost in transit.
public struct ByteString: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }

    /// The text when the bytes are valid UTF-8.
    public var string: String? { String(validating: bytes, as: UTF8.self) }

    public var description: String { string ?? String(decoding: bytes, as: UTF8.self) }

    public static func < (lhs: ByteString, rhs: ByteString) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    private enum Keys: String, CodingKey { case base64 }

    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            bytes = Array(text.utf8)
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        let encoded = try container.decode(String.self, forKey: .base64)
        guard let data = Data(base64Encoded: encoded) else {
            throw DecodingError.dataCorruptedError(forKey: .base64, in: container, debugDescription: "invalid base64")
        }
        bytes = Array(data)
    }

    public func encode(to encoder: any Encoder) throws {
        if let string {
            var container = encoder.singleValueContainer()
            try container.encode(string)
        } else {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(Data(bytes).base64EncodedString(), forKey: .base64)
        }
    }
}
