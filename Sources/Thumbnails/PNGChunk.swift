/// One chunk of a PNG: its four-letter type and its data (length and CRC are derived).
struct PNGChunk: Equatable {
    var type: [UInt8]
    var data: [UInt8]

    init(type: String, data: [UInt8]) {
        self.type = Array(type.utf8)
        self.data = data
    }

    init(type: [UInt8], data: [UInt8]) {
        self.type = type
        self.data = data
    }

    var typeName: String { String(decoding: type, as: UTF8.self) }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The chunks of a PNG, which must start with IHDR and end with IEND, every CRC correct:
    /// a PNG from another device or from a thumbnailer is refused whole rather than repaired.
    static func chunks(of png: [UInt8]) throws(ThumbnailError) -> [PNGChunk] {
        guard png.starts(with: signature) else { throw malformed("no PNG signature") }
        var chunks: [PNGChunk] = []
        var offset = signature.count
        while offset < png.count {
            guard png.count - offset >= 12 else { throw malformed("a chunk is cut short at byte \(offset)") }
            let length = Int(bigEndian32(png, at: offset))
            guard length <= 0x7FFF_FFFF, png.count - offset - 12 >= length else {
                throw malformed("a chunk of \(length) bytes at byte \(offset) runs past the end")
            }
            let type = Array(png[(offset + 4)..<(offset + 8)])
            let data = Array(png[(offset + 8)..<(offset + 8 + length)])
            let stored = bigEndian32(png, at: offset + 8 + length)
            let chunk = PNGChunk(type: type, data: data)
            guard stored == CRC32.checksum(type, data) else { throw malformed("the CRC of chunk \(chunk.typeName) at byte \(offset) is wrong") }
            chunks.append(chunk)
            offset += 12 + length
            if chunk.typeName == "IEND" { break }
        }
        guard chunks.first?.typeName == "IHDR", chunks.first?.data.count == 13 else { throw malformed("IHDR is not the first chunk") }
        guard chunks.last?.typeName == "IEND", offset == png.count else { throw malformed("IEND is not the last chunk") }
        return chunks
    }

    /// A PNG file of these chunks, each with its length and CRC.
    static func png(of chunks: [PNGChunk]) -> [UInt8] {
        var bytes = signature
        bytes.reserveCapacity(chunks.reduce(signature.count) { $0 + 12 + $1.data.count })
        for chunk in chunks {
            appendBigEndian32(UInt32(chunk.data.count), to: &bytes)
            bytes += chunk.type
            bytes += chunk.data
            appendBigEndian32(CRC32.checksum(chunk.type, chunk.data), to: &bytes)
        }
        return bytes
    }

    static func bigEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func appendBigEndian32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func malformed(_ message: String) -> ThumbnailError {
        ThumbnailError(code: .malformed, message: "not a well-formed PNG: \(message)")
    }
}
