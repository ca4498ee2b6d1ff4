/// PNG chunk surgery for the freedesktop cache: its keys (`Thumb::URI`, `Thumb::MTime`...)
/// are Latin-1 tEXt chunks. A thumbnail travels without any (they would tell another
/// device this one's paths and times) and each receiver adds its own.
public enum PNGText {
    /// Chunks that can say where or when a picture was made: tEXt/zTXt/iTXt hold text,
    /// tIME the time of the last change, eXIf camera metadata (location and time included).
    static let textTypes: Set<String> = ["tEXt", "zTXt", "iTXt", "tIME", "eXIf"]

    /// Dimensions from IHDR; throws ThumbnailError(.malformed) if not a PNG with IHDR first.
    public static func dimensions(_ png: [UInt8]) throws(ThumbnailError) -> (width: Int, height: Int) {
        let header = try PNGChunk.chunks(of: png)[0].data
        let width = Int(PNGChunk.bigEndian32(header, at: 0)), height = Int(PNGChunk.bigEndian32(header, at: 4))
        // The PNG specification: both in 1...2^31-1.
        guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height) else {
            throw ThumbnailError(code: .malformed, message: "not a well-formed PNG: IHDR says \(width)×\(height)")
        }
        return (width, height)
    }

    /// The longest edge, which a thumbnail's size bounds.
    static func longestEdge(_ png: [UInt8]) throws(ThumbnailError) -> Int {
        let (width, height) = try dimensions(png)
        return max(width, height)
    }

    /// The same PNG without tEXt/zTXt/iTXt/tIME chunks (so no path or time leaves the device);
    /// eXIf goes too.
    public static func stripped(_ png: [UInt8]) throws(ThumbnailError) -> [UInt8] {
        PNGChunk.png(of: try PNGChunk.chunks(of: png).filter { !textTypes.contains($0.typeName) })
    }

    /// Adds Latin-1 tEXt chunks right after IHDR (all together, valid CRC-32s), after stripping
    /// existing text chunks. Right after IHDR because GIO's verifier stops looking at the first
    /// chunk that is not tEXt once it has started reading them.
    public static func adding(_ text: [(key: String, value: String)], to png: [UInt8]) throws(ThumbnailError) -> [UInt8] {
        var chunks = try PNGChunk.chunks(of: png).filter { !textTypes.contains($0.typeName) }
        var added: [PNGChunk] = []
        for (key, value) in text {
            let keyBytes = try latin1(key, what: "key")
            guard (1...79).contains(keyBytes.count), !keyBytes.contains(0), keyBytes.first != 0x20, keyBytes.last != 0x20 else {
                throw ThumbnailError(code: .invalid, message: "\"\(key)\" cannot be a PNG tEXt key (1 to 79 Latin-1 characters, no NUL, no space at either end)")
            }
            let valueBytes = try latin1(value, what: "value of \(key)")
            guard !valueBytes.contains(0) else { throw ThumbnailError(code: .invalid, message: "the PNG tEXt value of \(key) holds a NUL") }
            added.append(PNGChunk(type: "tEXt", data: keyBytes + [0] + valueBytes))
        }
        chunks.insert(contentsOf: added, at: 1)
        return PNGChunk.png(of: chunks)
    }

    /// The tEXt key/values of a PNG (for tests and for checking an installed entry).
    public static func text(_ png: [UInt8]) throws(ThumbnailError) -> [String: String] {
        var result: [String: String] = [:]
        for chunk in try PNGChunk.chunks(of: png) where chunk.typeName == "tEXt" {
            guard let separator = chunk.data.firstIndex(of: 0) else {
                throw ThumbnailError(code: .malformed, message: "not a well-formed PNG: a tEXt chunk has no NUL after its key")
            }
            let key = fromLatin1(chunk.data[..<separator]), value = fromLatin1(chunk.data[(separator + 1)...])
            result[key] = value
        }
        return result
    }

    private static func latin1(_ text: String, what: String) throws(ThumbnailError) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            guard scalar.value <= 0xFF else {
                throw ThumbnailError(code: .invalid, message: "the PNG tEXt \(what) holds \(scalar.escaped(asASCII: true)), which is not Latin-1")
            }
            bytes.append(UInt8(scalar.value))
        }
        return bytes
    }

    private static func fromLatin1(_ bytes: ArraySlice<UInt8>) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }
}
