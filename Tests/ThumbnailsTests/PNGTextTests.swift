import Foundation
import Testing
import Thumbnails

/// Chunk surgery, checked by an independent reader: python's zlib.crc32 for the CRCs and
/// gdk-pixbuf (through python3-gi) for whether the result still loads with its keys.
@Suite struct PNGTextTests {
    static let keys: [(key: String, value: String)] = [("Thumb::URI", "file:///a%20b.jpg"), ("Thumb::MTime", "1700000000"), ("Software", "ubiqfs café")]

    @Test func dimensionsComeFromIHDR() throws {
        let png = TestPNG.make(width: 5, height: 3)
        let (width, height) = try PNGText.dimensions(png)
        #expect(width == 5 && height == 3)
    }

    @Test func malformedPNGsAreRefused() {
        let png = TestPNG.make(width: 4, height: 4)
        var badCRC = png
        badCRC[8 + 8 + 13] ^= 0x01  // the first byte of IHDR's CRC
        let notFirst = Array(png[..<8]) + Array(png[33...].dropLast(12)) + Array(png[8..<33]) + Array(png.suffix(12))
        for bad in [Array("not a png at all".utf8), Array(png.prefix(40)), png + [0], badCRC, notFirst, []] {
            #expect(throws: ThumbnailError.self) { try PNGText.dimensions(bad) }
            do {
                _ = try PNGText.stripped(bad)
                Issue.record("accepted a malformed PNG of \(bad.count) bytes")
            } catch {
                #expect(error.code == .malformed)
            }
        }
    }

    @Test func textGoesRightAfterIHDRTogether() throws {
        let old: [UInt8] = Array("Comment".utf8) + [0] + Array("/home/someone/secret.jpg".utf8)
        let png = TestPNG.make(width: 6, height: 4, extra: [(after: "IDAT", type: "tEXt", data: old), (after: "IHDR", type: "tIME", data: [7, 0xE8, 1, 2, 3, 4, 5])])
        let result = try PNGText.adding(Self.keys, to: png)
        #expect(TestPNG.chunkTypes(result) == ["IHDR", "tEXt", "tEXt", "tEXt", "IDAT", "IEND"])
        #expect(try PNGText.text(result) == ["Thumb::URI": "file:///a%20b.jpg", "Thumb::MTime": "1700000000", "Software": "ubiqfs café"])
        // Latin-1 in the file: é is one byte.
        #expect(result.count == png.count - (12 + old.count) - (12 + 7) + Self.keys.reduce(0) { $0 + 12 + $1.key.count + 1 + $1.value.unicodeScalars.count })
    }

    @Test func keysAndValuesMustBeLatin1() {
        let png = TestPNG.make(width: 2, height: 2)
        for bad in [("Thumb::URI", "file:///€"), ("", "x"), (" lead", "x"), (String(repeating: "k", count: 80), "x"), ("a\u{0}b", "x"), ("k", "a\u{0}b")] {
            do {
                _ = try PNGText.adding([(key: bad.0, value: bad.1)], to: png)
                Issue.record("accepted tEXt \(bad)")
            } catch {
                #expect(error.code == .invalid)
            }
        }
    }

    @Test func strippingRemovesTextTimeAndExifOnly() throws {
        let png = TestPNG.make(width: 3, height: 3, extra: [
            (after: "IHDR", type: "sBIT", data: [8, 8, 8]), (after: "sBIT", type: "zTXt", data: Array("k".utf8) + [0, 0, 0x78, 0x01]),
            (after: "zTXt", type: "iTXt", data: Array("k".utf8) + [0, 0, 0, 0, 0]), (after: "IDAT", type: "tIME", data: [7, 0xE8, 1, 2, 3, 4, 5]),
            (after: "tIME", type: "eXIf", data: [0x4D, 0x4D, 0, 42]), (after: "eXIf", type: "tEXt", data: Array("a".utf8) + [0] + Array("b".utf8)),
        ])
        let stripped = try PNGText.stripped(png)
        #expect(TestPNG.chunkTypes(stripped) == ["IHDR", "sBIT", "IDAT", "IEND"])
        #expect(try PNGText.text(stripped).isEmpty)
        #expect(try PNGText.stripped(stripped) == stripped)
        #expect(try PNGText.dimensions(stripped) == PNGText.dimensions(png))
    }

    /// Every chunk's CRC by zlib.crc32, and gdk-pixbuf's view of the result; then a control:
    /// a PNG with one wrong CRC must fail the same check.
    @Test(.enabled(if: Tools.hasPythonGI, "needs python3-gi and gir1.2-gdkpixbuf-2.0 (gdk-pixbuf as the reader)"))
    func anIndependentReaderAgrees() throws {
        let png = try PNGText.adding(Self.keys, to: TestPNG.make(width: 20, height: 10))
        let report = try Self.independentReport(png)
        #expect(report.contains("crc: ok"), "\(report)")
        #expect(report.contains("size: 20x10"), "\(report)")
        #expect(report.contains("tEXt::Thumb::URI=file:///a%20b.jpg") && report.contains("tEXt::Thumb::MTime=1700000000"), "\(report)")
        #expect(report.contains("tEXt::Software=ubiqfs café"), "\(report)")

        var broken = png
        broken[8 + 25 + 8 + 3] ^= 0x20  // a letter of the first tEXt key: its CRC no longer fits
        let control = try Self.independentReport(broken)
        #expect(control.contains("crc: bad tEXt"), "\(control)")
        #expect(throws: ThumbnailError.self) { try PNGText.text(broken) }
    }

    /// "crc: ok" or "crc: bad <types>", then what GdkPixbuf loads: "size: WxH" and its options.
    static func independentReport(_ png: [UInt8]) throws -> String {
        let script = """
            import sys, struct, zlib, gi
            gi.require_version('GdkPixbuf', '2.0')
            from gi.repository import GdkPixbuf
            data = sys.stdin.buffer.read()
            bad, offset = [], 8
            while offset < len(data):
                length, kind = struct.unpack('>I4s', data[offset:offset + 8])
                body = data[offset + 4:offset + 8 + length]
                if struct.unpack('>I', data[offset + 8 + length:offset + 12 + length])[0] != zlib.crc32(body) & 0xffffffff:
                    bad.append(kind.decode())
                offset += 12 + length
            print('crc: ' + ('bad ' + ' '.join(bad) if bad else 'ok'))
            loader = GdkPixbuf.PixbufLoader.new_with_type('png')
            loader.write(data)
            loader.close()
            pixbuf = loader.get_pixbuf()
            print('size: %dx%d' % (pixbuf.get_width(), pixbuf.get_height()))
            for key, value in sorted(pixbuf.get_options().items()):
                print('%s=%s' % (key, value))
            """
        return try Tools.python(script, input: Data(png)).text
    }
}
