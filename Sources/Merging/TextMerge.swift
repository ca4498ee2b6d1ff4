/// The three-way merge of a text file both devices changed since the version they last
/// shared (issue 40): line by line, as `git merge-file` merges, but never with conflict
/// markers: where the changes overlap there is no merge, and the caller keeps a copy.
public enum TextMerge {
    /// The merge of two sides' changes to a shared base, or nil when they overlap (a change on
    /// each side to the same or adjacent lines, as git merge-file counts a conflict), or when any
    /// input is not UTF-8 text (invalid UTF-8, or a NUL byte). Deterministic: the same inputs give
    /// the same bytes on every device, whichever side is "ours".
    public static func merge(base: [UInt8], ours: [UInt8], theirs: [UInt8]) -> [UInt8]? {
        try? merged(base: base, ours: ours, theirs: theirs)
    }

    /// Whether bytes are text this merge takes (UTF-8, no NUL).
    public static func isText(_ bytes: [UInt8]) -> Bool {
        !bytes.contains(0) && String(validating: bytes, as: UTF8.self) != nil
    }

    /// The merge `merge(base:ours:theirs:)` returns, or why there is none: `.notText`,
    /// `.overlap`, or `.tooManyChanges` when a side is too different from the base to
    /// compare within a bounded time (each comparison is capped, see `LineDiff.budget`).
    public static func merged(base: [UInt8], ours: [UInt8], theirs: [UInt8]) throws(MergeError) -> [UInt8] {
        for (name, bytes) in [("base", base), ("ours", ours), ("theirs", theirs)] where !isText(bytes) {
            throw MergeError(code: .notText, message: "\(name) is not UTF-8 text")
        }
        // One side unchanged, or both the same: the other side, exactly.
        if ours == theirs || base == theirs { return ours }
        if base == ours { return theirs }
        let (baseLines, ourLines, theirLines) = (Lines(base), Lines(ours), Lines(theirs))
        var numbering = LineNumbering()
        let baseNumbers = numbering.numbers(of: baseLines)
        let merge = ThreeWayMerge(
            base: baseLines, ours: ourLines, theirs: theirLines,
            ourHunks: try LineDiff.hunks(from: baseNumbers, to: numbering.numbers(of: ourLines)),
            theirHunks: try LineDiff.hunks(from: baseNumbers, to: numbering.numbers(of: theirLines))
        )
        return try merge.merged()
    }
}
