import Crypto
import ItemModel

/// One user's freedesktop thumbnail cache ($XDG_CACHE_HOME/thumbnails), written as
/// gnome-desktop writes it and read as GIO reads it: `<size folder>/<md5(uri)>.png`, whose
/// tEXt says which URI, mtime and size of the file it shows.
public struct FreedesktopCache: Sendable {
    /// The ".../thumbnails" folder.
    public let root: String

    public init(root: String) {
        self.root = root
    }

    /// The folder of a size: 128 normal, 256 large, 512 x-large, 1024 xx-large. Another
    /// size gets the folder of the next freedesktop size above it (xx-large above 1024).
    public static func directoryName(size: Int) -> String {
        switch size {
        case ...128: "normal"
        case ...256: "large"
        case ...512: "x-large"
        default: "xx-large"
        }
    }

    /// md5 lowercase hex + ".png": GIO and gnome-desktop hash the URI string, not the file.
    public static func fileName(uri: String) -> String {
        let digest = Insecure.MD5.hash(data: Array(uri.utf8))
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 0x10 ? "0" + hex : hex
        }.joined() + ".png"
    }

    /// Where the entry of that URI and size is.
    public func path(uri: String, size: Int) -> String {
        "\(root)/\(Self.directoryName(size: size))/\(Self.fileName(uri: uri))"
    }

    /// Writes each size (PNG bytes as received: text chunks are replaced by Thumb::URI,
    /// Thumb::MTime (seconds), Thumb::Size, Software=ubiqfs), atomically (temp file in the same
    /// folder, 0600, rename; folders 0700). Then deletes every size of this URI not given: GIO
    /// answers with the largest entry there is, so a stale larger one would shadow a good
    /// smaller one. Last, deletes the URI's fail entries (fail/<any subfolder>/<md5>.png): a
    /// download does not change the mtime, so they would stay valid forever. Every PNG is
    /// checked before anything is written.
    public func install(_ pngBySize: [Int: [UInt8]], uri: String, mtime: Int64, size: Int64) throws(ThumbnailError) {
        let text = Self.text(uri: uri, mtime: mtime, size: size)
        var prepared: [(size: Int, png: [UInt8])] = []
        for (edge, png) in pngBySize.sorted(by: { $0.key > $1.key }) {
            try Self.check(png, size: edge)
            prepared.append((edge, try PNGText.adding(text, to: png)))
        }
        for (edge, png) in prepared {
            try CacheFiles.makeFolder("\(root)/\(Self.directoryName(size: edge))")
            try CacheFiles.writeAtomically(png, to: path(uri: uri, size: edge))
        }
        for edge in Thumbnail.sizes.sorted() where pngBySize[edge] == nil {
            try CacheFiles.remove(path(uri: uri, size: edge))
        }
        try removeFailures(uri: uri)
    }

    /// Removes every size and fail entry of the URI.
    public func remove(uri: String) throws(ThumbnailError) {
        for edge in Thumbnail.sizes.sorted() {
            try CacheFiles.remove(path(uri: uri, size: edge))
        }
        try removeFailures(uri: uri)
    }

    /// Removes only the URI's fail entries (the file became local: the viewer may make its own).
    public func removeFailures(uri: String) throws(ThumbnailError) {
        let failures = root + "/fail"
        for folder in try CacheFiles.subfolders(of: failures) {
            try CacheFiles.remove("\(failures)/\(folder)/\(Self.fileName(uri: uri))")
        }
    }

    /// The PNG stored for that URI and size, if any.
    public func entry(uri: String, size: Int) -> [UInt8]? {
        CacheFiles.read(path(uri: uri, size: size))
    }

    /// Whether every given size exists for the URI with matching Thumb::URI/MTime/Size
    /// (what GIO's `thumbnail::is-valid` checks).
    public func isCurrent(uri: String, sizes: [Int], mtime: Int64, size: Int64) -> Bool {
        sizes.allSatisfy { edge in
            guard let png = entry(uri: uri, size: edge), let text = try? PNGText.text(png) else { return false }
            return text["Thumb::URI"] == uri && text["Thumb::MTime"] == String(mtime) && text["Thumb::Size"] == String(size)
        }
    }

    /// Re-keys the URI's entries to a new URI (rename/move) and/or new mtime/size: rewrites
    /// text, writes under the new md5, deletes the old. No-op if none exist. Entries a viewer
    /// made itself move too: they show the same content.
    public func move(from old: String, to new: String, mtime: Int64, size: Int64) throws(ThumbnailError) {
        var pngBySize: [Int: [UInt8]] = [:]
        for edge in Thumbnail.sizes {
            if let png = entry(uri: old, size: edge) { pngBySize[edge] = png }
        }
        guard !pngBySize.isEmpty else { return }
        try install(pngBySize, uri: new, mtime: mtime, size: size)
        if old != new { try remove(uri: old) }
    }

    /// The keys GIO checks (URI, MTime, and Size when present), and who wrote them.
    static func text(uri: String, mtime: Int64, size: Int64) -> [(key: String, value: String)] {
        [("Thumb::URI", uri), ("Thumb::MTime", String(mtime)), ("Thumb::Size", String(size)), ("Software", "ubiqfs")]
    }

    /// A thumbnail of a freedesktop size whose longest edge fits it.
    static func check(_ png: [UInt8], size: Int) throws(ThumbnailError) {
        guard Thumbnail.sizes.contains(size) else {
            throw ThumbnailError(code: .invalid, message: "\(size) is not a freedesktop thumbnail size (\(Thumbnail.sizes.sorted()))")
        }
        let edge = try PNGText.longestEdge(png)
        guard edge <= size else { throw ThumbnailError(code: .tooLarge, message: "a thumbnail of size \(size) is \(edge) pixels long") }
    }
}
