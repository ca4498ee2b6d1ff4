/// A minimal edit script between two sequences of line numbers (equal numbers for equal
/// lines), by Myers' O(ND) algorithm in linear space ("An O(ND) Difference Algorithm and Its
/// Variations", 1986): the middle of a shortest path through the edit graph is found by
/// searching from both corners at once, then each half is solved the same way. Memory is
/// linear; time is O((N+M)·D), counted in `work` and bounded by `budget`, past which the
/// search gives up rather than take seconds over files that have little left in common.
struct MyersSearch {
    /// Thrown when the search needs more work than its budget.
    struct OverBudget: Error {}

    /// The part of the edit graph still to solve: lines `a[aLow..<aHigh]` against `b[bLow..<bHigh]`.
    private struct Box {
        var aLow: Int, aHigh: Int, bLow: Int, bHigh: Int
    }

    private let a: [Int32]
    private let b: [Int32]
    /// Which lines of `a` the script deletes.
    private(set) var aChanged: [Bool]
    /// Which lines of `b` the script inserts.
    private(set) var bChanged: [Bool]
    /// The furthest `x` each search reached on each diagonal `x - y`, at `diagonal + shift`.
    private var forward: [Int]
    private var backward: [Int]
    private let shift: Int
    private var work = 0
    private let budget: Int

    init(_ a: [Int32], _ b: [Int32], budget: Int) {
        (self.a, self.b, self.budget) = (a, b, budget)
        aChanged = Array(repeating: false, count: a.count)
        bChanged = Array(repeating: false, count: b.count)
        shift = b.count + 1
        forward = Array(repeating: 0, count: a.count + b.count + 3)
        backward = forward
    }

    /// Marks the lines of a minimal edit script from `a` to `b`.
    mutating func run() throws(OverBudget) {
        try solve(Box(aLow: 0, aHigh: a.count, bLow: 0, bHigh: b.count))
    }

    private mutating func solve(_ whole: Box) throws(OverBudget) {
        var box = whole
        while box.aLow < box.aHigh, box.bLow < box.bHigh, a[box.aLow] == b[box.bLow] {
            box.aLow += 1
            box.bLow += 1
        }
        while box.aLow < box.aHigh, box.bLow < box.bHigh, a[box.aHigh - 1] == b[box.bHigh - 1] {
            box.aHigh -= 1
            box.bHigh -= 1
        }
        if box.aLow == box.aHigh || box.bLow == box.bHigh {
            for i in box.aLow..<box.aHigh { aChanged[i] = true }
            for j in box.bLow..<box.bHigh { bChanged[j] = true }
            return
        }
        let (x, y) = try middle(of: box)
        try solve(Box(aLow: box.aLow, aHigh: x, bLow: box.bLow, bHigh: y))
        try solve(Box(aLow: x, aHigh: box.aHigh, bLow: y, bHigh: box.bHigh))
    }

    /// A point on a shortest path from the box's top left corner to its bottom right one,
    /// neither corner (both sides non-empty, no common first or last line). Each search
    /// keeps, per diagonal, the furthest point it reaches within `d` edits; where a step
    /// would leave the box, the point is held at the box's edge, also reachable within `d`.
    /// Diagonals are scanned from the highest down, as git's diff scans them: where several
    /// paths are shortest, the first meeting found picks the one git picks.
    private mutating func middle(of box: Box) throws(OverBudget) -> (Int, Int) {
        let (lowest, highest) = (box.aLow - box.bHigh, box.aHigh - box.bLow)
        let (forwardCenter, backwardCenter) = (box.aLow - box.bLow, box.aHigh - box.bHigh)
        let odd = (backwardCenter - forwardCenter) & 1 != 0
        forward[forwardCenter + shift] = slideForward(box.aLow, diagonal: forwardCenter, box)
        backward[backwardCenter + shift] = slideBackward(box.aHigh, diagonal: backwardCenter, box)
        let rounds = (box.aHigh - box.aLow + box.bHigh - box.bLow + 1) / 2 + 1
        for d in 1...rounds {
            // Forward: a step right from diagonal k - 1 or down from k + 1.
            let (before, now) = (Self.diagonals(forwardCenter, d - 1, lowest, highest), Self.diagonals(forwardCenter, d, lowest, highest))
            let other = Self.diagonals(backwardCenter, d - 1, lowest, highest)
            for k in stride(from: now.upperBound, through: now.lowerBound, by: -2) {
                var x = k - 1 >= before.lowerBound ? forward[k - 1 + shift] + 1 : Int.min
                if k + 1 <= before.upperBound { x = max(x, forward[k + 1 + shift]) }
                x = slideForward(min(x, box.aHigh, box.bHigh + k), diagonal: k, box)
                forward[k + shift] = x
                if odd, other.contains(k), x >= backward[k + shift] { return (x, x - k) }
            }
            // Backward: a step left from diagonal k + 1 or up from k - 1.
            let (backBefore, backNow) = (other, Self.diagonals(backwardCenter, d, lowest, highest))
            for k in stride(from: backNow.upperBound, through: backNow.lowerBound, by: -2) {
                var x = k + 1 <= backBefore.upperBound ? backward[k + 1 + shift] - 1 : Int.max
                if k - 1 >= backBefore.lowerBound { x = min(x, backward[k - 1 + shift]) }
                x = slideBackward(max(x, box.aLow, box.bLow + k), diagonal: k, box)
                backward[k + shift] = x
                if !odd, now.contains(k), x <= forward[k + shift] { return (x, x - k) }
            }
            work += (now.count + backNow.count) / 2 + 1
            if work > budget { throw OverBudget() }
        }
        // Unreachable: the two searches meet by the time they have covered every edit.
        throw OverBudget()
    }

    /// The diagonals a search from `center` reaches in `d` edits inside `lowest...highest`:
    /// every other one from `center - d` to `center + d`. Never empty: a box with lines on
    /// both sides spans at least three diagonals, and `center` is one of them.
    private static func diagonals(_ center: Int, _ d: Int, _ lowest: Int, _ highest: Int) -> ClosedRange<Int> {
        var (first, last) = (center - d, center + d)
        if first < lowest { first += (lowest - first + 1) / 2 * 2 }
        if last > highest { last -= (last - highest + 1) / 2 * 2 }
        return first...last
    }

    /// The end of the run of equal lines from `x` along a diagonal, going forward.
    private mutating func slideForward(_ start: Int, diagonal k: Int, _ box: Box) -> Int {
        var x = start
        while x < box.aHigh, x - k < box.bHigh, a[x] == b[x - k] { x += 1 }
        work += x - start
        return x
    }

    /// The start of the run of equal lines ending at `x` along a diagonal, going backward.
    private mutating func slideBackward(_ start: Int, diagonal k: Int, _ box: Box) -> Int {
        var x = start
        while x > box.aLow, x - k > box.bLow, a[x - 1] == b[x - k - 1] { x -= 1 }
        work += start - x
        return x
    }
}
