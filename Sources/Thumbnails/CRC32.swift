/// The CRC-32 of PNG chunks (ISO 3309, as in zlib): libpng drops an ancillary chunk whose
/// CRC is wrong, so the tEXt keys a desktop checks must carry a correct one.
enum CRC32 {
    static func checksum(_ parts: [UInt8]...) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for part in parts {
            for byte in part {
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }
}
