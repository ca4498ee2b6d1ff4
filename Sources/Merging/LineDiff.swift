/// The changes one side made to the base, line by line: a minimal edit script (Myers), its
/// changes placed as git's diff places them, cut into hunks.
enum LineDiff {
    /// How much work one comparison may take, in steps of the search (a few nanoseconds
    /// each): enough for a few thousand changed lines in a file of a hundred thousand,
    /// about a second at most. Past it the sides are too different for a line merge to help.
    static let budget = 200_000_000

    /// The hunks that turn `base` into `side`, in the order of the base.
    static func hunks(from base: Lines, to side: Lines, budget: Int = budget) throws(MergeError) -> [Hunk] {
        var prefix = 0
        while prefix < base.count, prefix < side.count, base[prefix] == side[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < base.count - prefix, suffix < side.count - prefix,
            base[base.count - 1 - suffix] == side[side.count - 1 - suffix]
        {
            suffix += 1
        }
        let baseMiddle = prefix..<(base.count - suffix)
        let sideMiddle = prefix..<(side.count - suffix)
        var baseChanged = Array(repeating: false, count: base.count)
        var sideChanged = Array(repeating: false, count: side.count)
        if baseMiddle.isEmpty || sideMiddle.isEmpty {
            for i in baseMiddle { baseChanged[i] = true }
            for j in sideMiddle { sideChanged[j] = true }
        } else {
            var numbering = LineNumbering()
            let a = baseMiddle.map { numbering.number(base[$0]) }
            let b = sideMiddle.map { numbering.number(side[$0]) }
            var search = MyersSearch(a, b, budget: budget)
            do { try search.run() } catch { throw tooDifferent(base, side) }
            baseChanged.replaceSubrange(baseMiddle, with: search.aChanged)
            sideChanged.replaceSubrange(sideMiddle, with: search.bChanged)
        }
        guard let baseCompacted = ChangeCompaction.compacted(baseChanged, of: base, other: sideChanged, budget: budget),
            let sideCompacted = ChangeCompaction.compacted(sideChanged, of: side, other: baseCompacted, budget: budget)
        else { throw tooDifferent(base, side) }
        return Hunk.hunks(baseChanged: baseCompacted, sideChanged: sideCompacted)
    }

    private static func tooDifferent(_ base: Lines, _ side: Lines) -> MergeError {
        MergeError(code: .tooManyChanges, message: "a side of \(side.count) lines is too different from its base of \(base.count) to compare line by line")
    }
}
