/// Little-endian encoding for the backing folder's files (the journal and the metadata
/// image). A format of our own keeps the simulator free of Foundation and fast per fsync.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func u8(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func i64(_ value: Int64) {
        u64(UInt64(bitPattern: value))
    }

    /// A length, then the bytes.
    mutating func blob<C: Collection>(_ value: C) where C.Element == UInt8 {
        u64(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Overwrites 8 bytes at `offset` (a length known only once what follows is written).
    mutating func patchU64(_ value: UInt64, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }
}
