/// The changes one side made to the base, line by line: a minimal edit script (Myers), its
/// changes placed as git's diff places them, cut into hunks. Lines are given by number,
/// equal numbers for equal lines (`LineNumbering`).
enum LineDiff {
    /// How much work one comparison may take, in steps of the search (a few nanoseconds
    /// each). Measured on a 10 MB file of 212,000 lines: 12,000 changed lines that are not
    /// new (moved ones) take 0.7 s; 40,000 give up after 1.5 s. New lines cost little: they
    /// match nothing and are set aside before the search. A step count, not a clock, so
    /// every device gives up on the same inputs.
    static let budget = 200_000_000

    /// The hunks that turn `base` into `side`, in the order of the base.
    static func hunks(from base: [Int32], to side: [Int32], budget: Int = budget) throws(MergeError) -> [Hunk] {
        var prefix = 0
        while prefix < base.count, prefix < side.count, base[prefix] == side[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < base.count - prefix, suffix < side.count - prefix, base[base.count - 1 - suffix] == side[side.count - 1 - suffix] {
            suffix += 1
        }
        var baseChanged = Array(repeating: false, count: base.count)
        var sideChanged = Array(repeating: false, count: side.count)
        try compare(base, prefix..<(base.count - suffix), side, prefix..<(side.count - suffix), &baseChanged, &sideChanged, budget)
        guard let baseCompacted = ChangeCompaction.compacted(baseChanged, of: base, other: sideChanged, budget: budget),
            let sideCompacted = ChangeCompaction.compacted(sideChanged, of: side, other: baseCompacted, budget: budget)
        else { throw tooDifferent(base, side) }
        return Hunk.hunks(baseChanged: baseCompacted, sideChanged: sideCompacted)
    }

    /// Marks the changed lines of the two middles. A line found nowhere in the other file
    /// is changed whatever the alignment, so the search runs without it, as git's does:
    /// quicker, and the same choice where several alignments are minimal.
    private static func compare(
        _ base: [Int32], _ baseMiddle: Range<Int>, _ side: [Int32], _ sideMiddle: Range<Int>,
        _ baseChanged: inout [Bool], _ sideChanged: inout [Bool], _ budget: Int
    ) throws(MergeError) {
        let distinct = Int(max(base.max() ?? 0, side.max() ?? 0)) + 1
        var (inBase, inSide) = (Array(repeating: false, count: distinct), Array(repeating: false, count: distinct))
        for number in base { inBase[Int(number)] = true }
        for number in side { inSide[Int(number)] = true }
        let baseKept = baseMiddle.filter { inSide[Int(base[$0])] }
        let sideKept = sideMiddle.filter { inBase[Int(side[$0])] }
        for i in baseMiddle { baseChanged[i] = true }
        for j in sideMiddle { sideChanged[j] = true }
        var search = MyersSearch(baseKept.map { base[$0] }, sideKept.map { side[$0] }, budget: budget)
        do { try search.run() } catch { throw tooDifferent(base, side) }
        for (position, i) in baseKept.enumerated() { baseChanged[i] = search.aChanged[position] }
        for (position, j) in sideKept.enumerated() { sideChanged[j] = search.bChanged[position] }
    }

    private static func tooDifferent(_ base: [Int32], _ side: [Int32]) -> MergeError {
        MergeError(code: .tooManyChanges, message: "a side of \(side.count) lines is too different from its base of \(base.count) to compare line by line")
    }
}
