import Foundation
import Testing
import Thumbnails

/// What GIO itself (`gio info`, GLib 2.74) says of the entries ubiqfs installs for a real
/// local file, with XDG_CACHE_HOME pointed at a scratch folder: the name, the URI escaping
/// and the tEXt keys are right only if GIO finds the entry and calls it valid.
@Suite(.enabled(if: Tools.hasGIO, "needs gio (Debian: libglib2.0-bin)"))
struct GIOOracleTests {
    /// A name that needs escaping, so a URI that differs from GLib's would miss the entry.
    static let name = "Holiday 2024 (1) #a;b é.jpg"

    struct Photo {
        let scratch: Scratch
        let path: String
        let cache: FreedesktopCache
        var uri: String { ThumbnailURI.fileURI(path: Array(path.utf8)) }

        init() throws {
            scratch = try Scratch("gio")
            path = try scratch.write("photos/" + GIOOracleTests.name, Array(repeating: 7, count: 12345))
            cache = FreedesktopCache(root: scratch.path + "/cache/thumbnails")
        }

        /// st_mtime in seconds and st_size.
        func stat() throws -> (mtime: Int64, size: Int64) {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let date = try #require(attributes[.modificationDate] as? Date)
            return (Int64(date.timeIntervalSince1970.rounded(.down)), try #require((attributes[.size] as? NSNumber)?.int64Value))
        }

        /// `thumbnail::*` attributes as GIO reports them for the photo.
        func gioThumbnail() throws -> [String: String] {
            let output = try Tools.run(Tools.gio, ["info", "-a", "thumbnail::path,thumbnail::is-valid,thumbnail::failed", path],
                                       environment: ["XDG_CACHE_HOME": scratch.path + "/cache"])
            guard output.status == 0 else { throw Tools.Failed(description: "gio info failed: \(output.stderr)") }
            var attributes: [String: String] = [:]
            for line in output.text.split(separator: "\n") {
                let parts = line.trimmingCharacters(in: .whitespaces).split(separator: ": ", maxSplits: 1).map(String.init)
                if parts.count == 2, parts[0].hasPrefix("thumbnail::") { attributes[parts[0]] = parts[1] }
            }
            return attributes
        }
    }

    @Test func gioCallsAnInstalledEntryValidUntilTheFileChanges() throws {
        let photo = try Photo()
        #expect(try photo.gioThumbnail()["thumbnail::path"] == nil)
        let (mtime, size) = try photo.stat()
        try photo.cache.install([256: TestPNG.make(width: 256, height: 170), 128: TestPNG.make(width: 128, height: 85)], uri: photo.uri, mtime: mtime, size: size)
        let installed = try photo.gioThumbnail()
        #expect(installed["thumbnail::path"] == photo.cache.root + "/large/" + FreedesktopCache.fileName(uri: photo.uri))
        #expect(installed["thumbnail::is-valid"] == "TRUE")

        // The control: a new mtime (as `touch -d` gives) makes the same entry invalid.
        let touch = try Tools.run("/usr/bin/touch", ["-d", "2001-02-03 04:05:06", photo.path])
        #expect(touch.status == 0)
        #expect(try photo.gioThumbnail()["thumbnail::is-valid"] == "FALSE")
        let touched = try photo.stat()
        #expect(!photo.cache.isCurrent(uri: photo.uri, sizes: [256, 128], mtime: touched.mtime, size: touched.size))

        try photo.cache.move(from: photo.uri, to: photo.uri, mtime: touched.mtime, size: touched.size)
        #expect(try photo.gioThumbnail()["thumbnail::is-valid"] == "TRUE")
    }

    /// Why install deletes the sizes it is not given: GIO answers with the largest entry.
    @Test func aStaleLargerEntryShadowsUntilInstallDeletesIt() throws {
        let photo = try Photo()
        let (mtime, size) = try photo.stat()
        try photo.cache.install([1024: TestPNG.make(width: 4, height: 4)], uri: photo.uri, mtime: mtime - 100, size: size)
        #expect(try photo.gioThumbnail()["thumbnail::path"]?.contains("/xx-large/") == true)
        #expect(try photo.gioThumbnail()["thumbnail::is-valid"] == "FALSE")
        try photo.cache.install([256: TestPNG.make(width: 4, height: 4)], uri: photo.uri, mtime: mtime, size: size)
        let answer = try photo.gioThumbnail()
        #expect(answer["thumbnail::path"]?.contains("/large/") == true)
        #expect(answer["thumbnail::is-valid"] == "TRUE")
    }

    /// GIO reads fail entries (named as ours) only when no size entry exists.
    @Test func failEntriesAreFoundByGIOAndRemoved() throws {
        let photo = try Photo()
        let (mtime, size) = try photo.stat()
        let failure = try PNGText.adding([("Thumb::URI", photo.uri), ("Thumb::MTime", String(mtime))], to: TestPNG.make(width: 1, height: 1))
        try photo.scratch.write("cache/thumbnails/fail/gnome-thumbnail-factory/" + FreedesktopCache.fileName(uri: photo.uri), failure)
        #expect(try photo.gioThumbnail()["thumbnail::failed"] == "TRUE")
        try photo.cache.removeFailures(uri: photo.uri)
        #expect(try photo.gioThumbnail()["thumbnail::failed"] == nil)

        try photo.scratch.write("cache/thumbnails/fail/gnome-thumbnail-factory/" + FreedesktopCache.fileName(uri: photo.uri), failure)
        try photo.cache.install([128: TestPNG.make(width: 2, height: 2)], uri: photo.uri, mtime: mtime, size: size)
        #expect(try photo.gioThumbnail()["thumbnail::is-valid"] == "TRUE")
        #expect(!photo.scratch.exists("cache/thumbnails/fail/gnome-thumbnail-factory/" + FreedesktopCache.fileName(uri: photo.uri)))
    }
}
