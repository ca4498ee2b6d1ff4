import ItemModel

/// Random texts and random edits of them, for merges: lines from a small vocabulary so that
/// equal lines and ambiguous alignments are common, in some cases mixed with lines of their own; `\n` or `\r\n` files, a few lines with
/// the other ending, some without a last newline, some empty; each side edited by a few
/// insertions, deletions and replacements of lines, sometimes the same edit on both.
struct TextGenerator {
    static let vocabulary = ["a", "b", "c", "d", "", "}", "{", "x = 1", "return x", "# é", "日本", "a\r"]

    /// A file as lines without their endings, joined by `newline`, the last followed by one
    /// unless `lastNewline` is false.
    struct File: Equatable {
        var lines: [String]
        var newline: String
        var lastNewline: Bool

        var bytes: [UInt8] {
            guard !lines.isEmpty else { return [] }
            return Array((lines.joined(separator: newline) + (lastNewline ? newline : "")).utf8)
        }
    }

    /// One edit of a file: `count` lines from `at` replaced by `lines` (an insertion when
    /// `count` is 0, a deletion when `lines` is empty); or the last newline switched.
    enum Edit {
        case replace(at: Int, count: Int, lines: [String])
        case switchLastNewline
    }

    var rng: SplitMix64
    /// The most lines of a base; edits scale with it.
    var maxLines = 30

    /// The chance in percent that a new line is one of its own (as most lines of real
    /// texts are), not from the vocabulary; drawn for each case.
    var uniqueLines = 0
    private var made = 0

    init(rng: SplitMix64) {
        self.rng = rng
    }

    mutating func line() -> String {
        guard rng.chance(uniqueLines) else { return rng.pick(Self.vocabulary)! }
        made += 1
        return "line \(made)"
    }

    mutating func base() -> File {
        let count = rng.chance(6) ? 0 : 1 + rng.below(rng.chance(30) ? maxLines : (maxLines + 1) / 2)
        return File(
            lines: (0..<count).map { _ in line() },
            newline: rng.chance(15) ? "\r\n" : "\n",
            lastNewline: !rng.chance(15)
        )
    }

    mutating func edit(of file: File) -> Edit {
        if rng.chance(8) { return .switchLastNewline }
        let at = rng.below(file.lines.count + 1)
        let count = min(file.lines.count - at, rng.chance(40) ? 0 : 1 + rng.below(rng.chance(25) ? 4 : 2))
        let inserted = count > 0 && rng.chance(40) ? 0 : 1 + rng.below(rng.chance(25) ? 4 : 2)
        return .replace(at: at, count: count, lines: (0..<inserted).map { _ in line() })
    }

    static func apply(_ edit: Edit, to file: inout File) {
        switch edit {
        case .switchLastNewline:
            file.lastNewline.toggle()
        case .replace(let at, let count, let lines):
            let at = min(at, file.lines.count)
            file.lines.replaceSubrange(at..<min(file.lines.count, at + count), with: lines)
        }
    }

    /// A base and two sides: each side a few edits of the base, sometimes after a first edit
    /// both sides made; sometimes a side is the base, sometimes both sides are the same.
    mutating func sides() -> (base: File, ours: File, theirs: File) {
        uniqueLines = rng.pick([0, 0, 30, 70, 95])!
        let base = base()
        var (ours, theirs) = (base, base)
        if rng.chance(20) {
            let shared = edit(of: base)
            Self.apply(shared, to: &ours)
            Self.apply(shared, to: &theirs)
        }
        let edits = 3 * max(1, maxLines / 30)
        for _ in 0..<(rng.chance(10) ? 0 : 1 + rng.below(edits)) { Self.apply(edit(of: ours), to: &ours) }
        for _ in 0..<(rng.chance(10) ? 0 : 1 + rng.below(edits)) { Self.apply(edit(of: theirs), to: &theirs) }
        if rng.chance(3) { theirs = ours }
        return (base, ours, theirs)
    }
}
