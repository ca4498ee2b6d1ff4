/// The cuts of edited content found from the old cuts and the bytes around the edits
/// (`Chunker.cuts(after:to:parameters:read:)`), and what had to be read for them.
public struct Rechunk: Sendable, Hashable {
    /// Every cut of the new content, exactly as `Chunker.cuts(of:parameters:)` gives them.
    public let cuts: [Int]
    /// The ranges of the new content that were read, in order, contiguous reads merged.
    public let read: [Range<Int>]
    /// New chunks that are old chunks moved by the edits, by index (new to old): the same
    /// bytes, which were not read.
    public let kept: [Int: Int]

    public var bytesRead: Int { read.reduce(0) { $0 + $1.count } }
}
