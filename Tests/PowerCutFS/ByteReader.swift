/// Reads what `ByteWriter` wrote; any read past the end throws, so a damaged file is
/// reported instead of trusted.
struct ByteReader {
    struct Truncated: Error {}

    private let bytes: [UInt8]
    private(set) var offset: Int
    private let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = start
        self.end = end ?? bytes.count
    }

    var isAtEnd: Bool { offset >= end }

    mutating func u8() throws(Truncated) -> UInt8 {
        guard offset < end else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u32() throws(Truncated) -> UInt32 {
        UInt32(truncatingIfNeeded: try fixed(4))
    }

    mutating func u64() throws(Truncated) -> UInt64 {
        try fixed(8)
    }

    mutating func i64() throws(Truncated) -> Int64 {
        Int64(bitPattern: try fixed(8))
    }

    mutating func blob() throws(Truncated) -> [UInt8] {
        let count = try u64()
        guard count <= UInt64(end - offset) else { throw Truncated() }
        defer { offset += Int(count) }
        return Array(bytes[offset..<offset + Int(count)])
    }

    private mutating func fixed(_ width: Int) throws(Truncated) -> UInt64 {
        guard end - offset >= width else { throw Truncated() }
        var value: UInt64 = 0
        for index in (0..<width).reversed() {
            value = value << 8 | UInt64(bytes[offset + index])
        }
        offset += width
        return value
    }
}
