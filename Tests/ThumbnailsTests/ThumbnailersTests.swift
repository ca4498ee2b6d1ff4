import Foundation
import Testing
import Thumbnails

/// `make` and `scale` with the desktop's own gdk-pixbuf-thumbnailer, directly and under
/// bubblewrap, checked by reading the results back with gdk-pixbuf.
@Suite(.enabled(if: Tools.hasThumbnailer, "needs gdk-pixbuf-thumbnailer (Debian: libgdk-pixbuf2.0-bin) and its .thumbnailer file"))
struct ThumbnailersTests {
    static let system = ["/usr/share"]

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/mime/globs2"), "needs shared-mime-info"))
    func namesMapToTypesWithAThumbnailer() {
        let thumbnailers = Thumbnailers(dataDirectories: Self.system)
        let cases: [([UInt8], String?)] = [
            (Array("photo.jpg".utf8), "image/jpeg"), (Array("PHOTO.JPEG".utf8), "image/jpeg"), (Array("a b.png".utf8), "image/png"),
            (Array("caf".utf8) + [0xE9] + Array(".jpg".utf8), "image/jpeg"), (Array("notes.txt".utf8), nil), (Array("README".utf8), nil),
            (Array("archive.tar.gz".utf8), nil), (Array("photo".utf8), nil), (Array(".jpg".utf8), "image/jpeg"),
        ]
        for (name, expected) in cases {
            #expect(thumbnailers.mimeType(name: name) == expected, "\(String(decoding: name, as: UTF8.self))")
        }
    }

    /// A 1200×800 JPEG, in a file without an extension as the content cache keeps it.
    static func jpeg(in scratch: Scratch) throws -> String {
        let source = scratch.path + "/cache-file-1234"
        let output = try Tools.run(Tools.convert, ["-size", "1200x800", "plasma:fractal", "-quality", "90", "jpeg:" + source])
        guard output.status == 0 else { throw Tools.Failed(description: "convert failed: \(output.stderr)") }
        return source
    }

    @Test(.enabled(if: Tools.hasConvert, "needs /usr/bin/convert (Debian: imagemagick)"), arguments: [false, true])
    func makeDecodesOnceAndDerivesTheSmallerSizes(sandboxed: Bool) async throws {
        if sandboxed && !Tools.bwrapWorks {
            print("ThumbnailersTests: bwrap cannot make namespaces here, so the sandboxed run is not tried")
            return
        }
        let scratch = try Scratch("make")
        let source = try Self.jpeg(in: scratch)
        let thumbnailers = Thumbnailers(dataDirectories: Self.system, sandbox: sandboxed ? .bubblewrap : .none, gstreamerCache: nil)
        let made = try await thumbnailers.make(source: source, name: Array("IMG_0001.JPG".utf8), sizes: [128, 256], timeout: .seconds(600))
        #expect(made.keys.sorted() == [128, 256])
        for (size, png) in made {
            // 1200×800 scaled: the height rounds either way.
            let (width, height) = try PNGText.dimensions(png)
            #expect(width == size && abs(height - size * 2 / 3) <= 1, "size \(size): \(width)×\(height)")
            #expect(try PNGText.text(png).isEmpty)
            if Tools.hasPythonGI {
                let report = try PNGTextTests.independentReport(png)
                #expect(report.contains("crc: ok") && report.contains("size: \(width)x\(height)"), "\(report)")
            }
        }
        #expect(scratch.files() == ["cache-file-1234"])
    }

    @Test func scaleShrinksToTheLongestEdge() async throws {
        let thumbnailers = Thumbnailers(dataDirectories: Self.system)
        let png = try PNGText.adding([("Thumb::URI", "file:///secret")], to: TestPNG.make(width: 300, height: 512))
        let scaled = try await thumbnailers.scale(png, to: 128, timeout: .seconds(600))
        #expect(try PNGText.dimensions(scaled) == (width: 75, height: 128))
        #expect(try PNGText.text(scaled).isEmpty)
        // Already small enough: the same pixels, without the text.
        let small = try await thumbnailers.scale(png, to: 512, timeout: .seconds(600))
        #expect(try small == PNGText.stripped(png))
        await #expect(throws: ThumbnailError.self) { try await thumbnailers.scale(png, to: 100, timeout: .seconds(600)) }
    }

    @Test func aNameWithoutAThumbnailerIsRefused() async throws {
        let thumbnailers = Thumbnailers(dataDirectories: Self.system)
        do {
            _ = try await thumbnailers.make(source: "/dev/null", name: Array("notes.txt".utf8), sizes: [256], timeout: .seconds(5))
            Issue.record("made a thumbnail of a text file")
        } catch {
            #expect(error.code == .unsupported)
        }
    }

    /// A file the thumbnailer cannot read fails with what it said.
    @Test func aBrokenImageFailsWithTheThumbnailersMessage() async throws {
        let scratch = try Scratch("broken")
        let source = try scratch.write("broken", Array("this is not a JPEG".utf8))
        let thumbnailers = Thumbnailers(dataDirectories: Self.system)
        do {
            _ = try await thumbnailers.make(source: source, name: Array("a.jpg".utf8), sizes: [256], timeout: .seconds(600))
            Issue.record("made a thumbnail of a broken JPEG")
        } catch {
            #expect(error.code == .thumbnailerFailed)
            #expect(error.message.contains("exit status"), "\(error)")
        }
    }
}
