import ContentChunking
import ItemModel

/// What was written to a file since its content was the committed version `base` (the
/// handle table keeps it in memory, from the commit on): the ranges written and the
/// shortest length it was cut to. An upload then reads only around them
/// (`IncrementalCutting`). Lost with the daemon: a file without it is read whole.
public struct WrittenRanges: Sendable, Hashable {
    /// The committed version's blocks, by `WrittenRanges.base(of:)`.
    public let base: String
    /// The committed version's length.
    public let length: Int64
    /// Written ranges, sorted, apart (touching ones merged).
    public private(set) var written: [Range<Int64>] = []
    /// The shortest length a truncate left (nil: never cut).
    public private(set) var shortest: Int64?

    /// Past this many apart ranges, an upload would read more windows than it may hold
    /// (`IncrementalCutting.windowLimit`, four average chunks each), and each write made
    /// here (under the handle table's lock, in a FUSE callback) would cost more: the file
    /// stops being followed and is read whole.
    public static let rangeLimit = 64

    public var isTooScattered: Bool { written.count > Self.rangeLimit }

    /// Whether a write landed inside the committed content and ended before its end: a
    /// file edited in place (a database's pages), which an upload cuts fine
    /// (`FileCuttings`). Appends, and a whole rewrite from the start, are not.
    public var editsInPlace: Bool { written.contains { $0.upperBound < min(length, shortest ?? length) } }

    public init(base: String, length: Int64) {
        (self.base, self.length) = (base, length)
    }

    /// The identity of a committed version's content for `base`: its blocks' names and
    /// lengths in order, as a splice names its base.
    public static func base(of blocks: [BlockReference]) -> String {
        BlockSplice.digest(of: blocks)
    }

    public mutating func write(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var merged = range
        var kept: [Range<Int64>] = []
        for existing in written {
            if existing.upperBound < merged.lowerBound || existing.lowerBound > merged.upperBound {
                kept.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)..<max(existing.upperBound, merged.upperBound)
            }
        }
        kept.append(merged)
        written = kept.sorted { $0.lowerBound < $1.lowerBound }
    }

    public mutating func truncate(to size: Int64) {
        shortest = min(shortest ?? size, size)
    }

    /// The edits that make the committed content the content now, `newLength` bytes long:
    /// the written ranges before the first byte a length change touched, then the tail from
    /// there as one edit.
    public func edits(newLength: Int64) -> [ChunkEdit] {
        let tail = min(length, newLength, shortest ?? length)
        var edits: [ChunkEdit] = []
        for range in written where range.lowerBound < tail {
            let upper = min(range.upperBound, tail)
            edits.append(ChunkEdit(replaced: Int(range.lowerBound)..<Int(upper), length: Int(upper - range.lowerBound)))
        }
        if tail < length || tail < newLength {
            var start = Int(tail)
            if let last = edits.last, last.replaced.upperBound == start {
                start = last.replaced.lowerBound
                edits.removeLast()
            }
            edits.append(ChunkEdit(replaced: start..<Int(length), length: Int(newLength) - start))
        }
        return edits
    }
}
