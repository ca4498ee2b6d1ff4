@testable import Thumbnails

/// Small PNGs made here (RGB, a gradient, deflate "stored" blocks), so the chunk tests need
/// no image library; extra chunks go where a test wants them.
enum TestPNG {
    static func make(width: Int, height: Int, extra: [(after: String, type: String, data: [UInt8])] = []) -> [UInt8] {
        var header: [UInt8] = []
        PNGChunk.appendBigEndian32(UInt32(width), to: &header)
        PNGChunk.appendBigEndian32(UInt32(height), to: &header)
        header += [8, 2, 0, 0, 0]
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)
            for x in 0..<width { raw += [UInt8(x * 255 / max(width - 1, 1)), UInt8(y * 255 / max(height - 1, 1)), 0x80] }
        }
        var chunks = [PNGChunk(type: "IHDR", data: header), PNGChunk(type: "IDAT", data: zlibStored(raw)), PNGChunk(type: "IEND", data: [])]
        for (after, type, data) in extra {
            let index = chunks.firstIndex { $0.typeName == after }! + 1
            chunks.insert(PNGChunk(type: type, data: data), at: index)
        }
        return PNGChunk.png(of: chunks)
    }

    /// A zlib stream of uncompressed blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, data.count - offset)
            let final: UInt8 = offset + count == data.count ? 1 : 0
            out += [final, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            out += data[offset..<(offset + count)]
            offset += count
        } while offset < data.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        PNGChunk.appendBigEndian32(b << 16 | a, to: &out)
        return out
    }

    /// The chunk types in order, as an independent reader sees them.
    static func chunkTypes(_ png: [UInt8]) -> [String] {
        var types: [String] = []
        var offset = 8
        while offset + 8 <= png.count {
            let length = Int(PNGChunk.bigEndian32(png, at: offset))
            types.append(String(decoding: png[(offset + 4)..<(offset + 8)], as: UTF8.self))
            offset += 12 + length
        }
        return types
    }
}
