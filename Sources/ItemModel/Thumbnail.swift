/// A small picture of a file's content (format 3), made by a device that had the content,
/// so that other devices show it without downloading the file. It shows the `blocks` of
/// the upsert that carries it; an upsert with other content and no thumbnails has none.
public struct Thumbnail: Hashable, Sendable, Codable {
    /// The longest edge in pixels: one of the freedesktop sizes (`sizes`).
    public var size: Int
    /// A PNG's bytes, named and stored as content blocks are (inline, packed or whole).
    public var blocks: [BlockReference]

    /// normal, large, x-large and xx-large of the freedesktop thumbnail specification.
    public static let sizes: Set<Int> = [128, 256, 512, 1024]
    /// The most bytes one thumbnail may have (an item carries at most one of each size).
    public static let maxBytes: Int64 = 1 << 20

    public init(size: Int, blocks: [BlockReference]) {
        self.size = size
        self.blocks = blocks
    }

    /// Whether a reader keeps it: a known size, well-formed references, at most `maxBytes`.
    public var isAcceptable: Bool {
        guard Self.sizes.contains(size), !blocks.isEmpty, blocks.allSatisfy(\.isWellFormed) else { return false }
        var total: Int64 = 0
        for block in blocks {
            total += block.length
            if total > Self.maxBytes { return false }
        }
        return true
    }
}
