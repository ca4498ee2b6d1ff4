import Foundation
import ItemModel
import Testing
import Thumbnails

/// The URI and the cache file name it hashes to, against the memo's vectors and GLib itself.
@Suite struct ThumbnailURITests {
    @Test func knownVectors() {
        // The thumbnail specification's own example.
        #expect(ThumbnailURI.fileURI(path: Array("/home/jens/photos/me.png".utf8)) == "file:///home/jens/photos/me.png")
        #expect(FreedesktopCache.fileName(uri: "file:///home/jens/photos/me.png") == "c6ee772d9e49320e97ec29a7eb5b1697.png")
        let holiday = ThumbnailURI.fileURI(path: Array("/mnt/cloud/Holiday 2024/IMG_0001 (1).jpg".utf8))
        #expect(holiday == "file:///mnt/cloud/Holiday%202024/IMG_0001%20(1).jpg")
        #expect(FreedesktopCache.fileName(uri: holiday) == "57cd9e29e5ac0c8bfe992713f910074a.png")
        let punctuation = ThumbnailURI.fileURI(path: Array("/mnt/c/a#b;c?é.jpg".utf8))
        #expect(punctuation == "file:///mnt/c/a%23b%3Bc%3F%C3%A9.jpg")
        #expect(FreedesktopCache.fileName(uri: punctuation) == "8e3a838c383a0de9cb2b1ac5110e68e9.png")
    }

    @Test func everyPrintableASCIICharacter() {
        let path = [UInt8(ascii: "/")] + Array(0x20...0x7E)
        let expected = "file:///%20!%22%23$%25&'()*+,-./0123456789:%3B%3C=%3E%3F@ABCDEFGHIJKLMNOPQRSTUVWXYZ%5B%5C%5D%5E_%60abcdefghijklmnopqrstuvwxyz%7B%7C%7D~"
        #expect(ThumbnailURI.fileURI(path: path) == expected)
    }

    @Test func controlAndHighBytesAreEscapedInUppercase() {
        #expect(ThumbnailURI.fileURI(path: [0x2F, 0x01, 0x09, 0x0A, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]) == "file:///%01%09%0A%7F%80%C3%A9%FF")
        // Not UTF-8 (Latin-1 "café"): escaped byte for byte, not replaced.
        #expect(ThumbnailURI.fileURI(path: Array("/caf".utf8) + [0xE9]) == "file:///caf%E9")
        #expect(ThumbnailURI.fileURI(path: Array("/".utf8)) == "file:///")
    }

    /// Random byte paths against `GLib.filename_to_uri` itself; a naive escaper (one that
    /// keeps every printable character but space and `%`) must disagree, or the check proves
    /// nothing. UBIQFS_RANDOM_SEED replays a run.
    @Test(.enabled(if: Tools.hasPythonGI, "needs python3-gi and gir1.2-glib-2.0 (GLib as the oracle)"))
    func randomPathsAgreeWithGLib() throws {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("ThumbnailURITests: seed \(seed) (replay with UBIQFS_RANDOM_SEED=\(seed))")
        var rng = SplitMix64(seed: seed)
        let paths = (0..<3000).map { _ in Self.randomPath(&rng) }
        let input = paths.map { $0.map { String(format: "%02x", $0) }.joined() + "\n" }.joined()
        let script = """
            import sys
            from gi.repository import GLib
            for line in sys.stdin:
                print(GLib.filename_to_uri(bytes.fromhex(line.strip()), None))
            """
        let glib = try Tools.python(script, input: Data(input.utf8)).text.split(separator: "\n").map(String.init)
        try #require(glib.count == paths.count)
        var naiveDisagrees = 0
        for (path, expected) in zip(paths, glib) {
            let ours = ThumbnailURI.fileURI(path: path)
            #expect(ours == expected, "seed \(seed): path bytes \(path)")
            if ours != expected { return }
            if Self.naiveURI(path) != expected { naiveDisagrees += 1 }
        }
        #expect(naiveDisagrees > 0, "the oracle cannot tell a naive escaper from GLib's")
    }

    /// An absolute path of 1 to 4 components: bytes 1...255 but `/`, printable ASCII often.
    static func randomPath(_ rng: inout SplitMix64) -> [UInt8] {
        var path: [UInt8] = []
        for _ in 0..<(1 + rng.below(4)) {
            path.append(UInt8(ascii: "/"))
            for _ in 0..<(1 + rng.below(12)) {
                var byte = rng.chance(60) ? UInt8(0x20 + rng.below(95)) : UInt8(1 + rng.below(255))
                if byte == UInt8(ascii: "/") { byte = UInt8(ascii: "_") }
                path.append(byte)
            }
        }
        return path
    }

    static func naiveURI(_ path: [UInt8]) -> String {
        "file://" + path.map { (0x21...0x7E).contains($0) && $0 != 0x25 ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }
}
