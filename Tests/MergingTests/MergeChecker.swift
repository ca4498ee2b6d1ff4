/// The criterion a three-way merge is held to, checked without the merge's own diff: a
/// result is correct when it is what applying a minimal diff of each side to the base
/// gives, where no change of one side touches a change of the other (no base line kept
/// by both between them) unless the two are the same change. So every change of each side
/// is in it, nothing else changed, and nothing was decided for the user where both sides
/// edited the same place. Any minimal diffs will do (duplicate lines let them differ),
/// so a merge that aligns differently from git can still pass, and one that drops, adds
/// or moves a line cannot.
///
/// The check walks base, ours, theirs and the result together, a line at a time: a base
/// line both sides keep (in the result too), or a step of one side's change, or the same
/// step on both sides; a side's steps must stay on some minimal path of its own diff, and
/// the steps between two lines kept by both must all be one side's, or all the same on both.
struct MergeChecker {
    /// Which sides the steps since the last line kept by both belong to.
    private enum Stretch: UInt8 { case none = 0, ours = 1, theirs = 2, both = 3 }

    private let base: [Int], ours: [Int], theirs: [Int]
    /// Longest common subsequence of the base's and a side's suffixes, at `i * (n + 1) + j`.
    private let oursSuffix: [Int], theirsSuffix: [Int]

    init(base: [UInt8], ours: [UInt8], theirs: [UInt8]) {
        var numbers: [[UInt8]: Int] = [:]
        func lines(_ bytes: [UInt8]) -> [Int] {
            Self.lines(bytes).map { line in
                if let number = numbers[line] { return number }
                numbers[line] = numbers.count
                return numbers.count - 1
            }
        }
        (self.base, self.ours, self.theirs) = (lines(base), lines(ours), lines(theirs))
        self.numbers = numbers
        oursSuffix = Self.suffixTable(self.base, self.ours)
        theirsSuffix = Self.suffixTable(self.base, self.theirs)
    }

    private let numbers: [[UInt8]: Int]

    /// Lines ending after each `\n`, the last possibly without one.
    static func lines(_ bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            result.append(Array(bytes[start...index]))
            start = index + 1
        }
        if start < bytes.count { result.append(Array(bytes[start...])) }
        return result
    }

    private static func suffixTable(_ a: [Int], _ b: [Int]) -> [Int] {
        let width = b.count + 1
        var table = Array(repeating: 0, count: (a.count + 1) * width)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                table[i * width + j] = a[i] == b[j] ? table[(i + 1) * width + j + 1] + 1 : max(table[(i + 1) * width + j], table[i * width + j + 1])
            }
        }
        return table
    }

    /// Whether `result` is a correct merge.
    func accepts(_ result: [UInt8]) -> Bool {
        let merged = Self.lines(result).map { numbers[$0] ?? -1 }
        return search(merged)
    }

    /// Whether some correct merge exists (the walk with the result left free).
    func anyMergeExists() -> Bool { search(nil) }

    /// A side's step from base line `i` and side line `j`, kept on a minimal path.
    private enum Step { case match, delete, insert }

    private func allowed(_ step: Step, _ i: Int, _ j: Int, side: [Int], suffix: [Int]) -> Bool {
        let width = side.count + 1
        let here = suffix[i * width + j]
        switch step {
        case .match: return i < base.count && j < side.count && base[i] == side[j] && suffix[(i + 1) * width + j + 1] == here - 1
        case .delete: return i < base.count && suffix[(i + 1) * width + j] == here
        case .insert: return j < side.count && suffix[i * width + j + 1] == here
        }
    }

    private struct State { var i: Int, j: Int, k: Int, l: Int, stretch: Stretch }

    /// Depth-first over (base, ours, theirs, result) positions and the current stretch.
    /// With no result given, the result line is whatever the step writes.
    private func search(_ merged: [Int]?) -> Bool {
        let (nb, no, nt, nr) = (base.count, ours.count, theirs.count, merged?.count ?? 0)
        // The stretches seen at each position: the few positions on minimal paths, not all.
        var seen: [Int: UInt8] = [:]
        var stack = [State(i: 0, j: 0, k: 0, l: 0, stretch: .none)]
        while let state = stack.popLast() {
            let index = ((state.i * (no + 1) + state.j) * (nt + 1) + state.k) * (nr + 1) + state.l
            guard seen[index, default: 0] & (1 << state.stretch.rawValue) == 0 else { continue }
            seen[index, default: 0] |= 1 << state.stretch.rawValue
            if state.i == nb, state.j == no, state.k == nt, merged == nil || state.l == nr { return true }
            stack += successors(of: state, merged)
        }
        return false
    }

    private func successors(of s: State, _ merged: [Int]?) -> [State] {
        func oursMay(_ step: Step) -> Bool { allowed(step, s.i, s.j, side: ours, suffix: oursSuffix) }
        func theirsMay(_ step: Step) -> Bool { allowed(step, s.i, s.k, side: theirs, suffix: theirsSuffix) }
        func writes(_ line: Int) -> Bool { merged.map { s.l < $0.count && $0[s.l] == line } ?? true }
        func joins(_ stretch: Stretch) -> Bool { s.stretch == .none || s.stretch == stretch }
        let l = merged == nil ? 0 : s.l + 1
        var next: [State] = []
        if oursMay(.match), theirsMay(.match), writes(base[s.i]) {
            next.append(State(i: s.i + 1, j: s.j + 1, k: s.k + 1, l: l, stretch: .none))
        }
        if joins(.ours), oursMay(.delete), theirsMay(.match) {
            next.append(State(i: s.i + 1, j: s.j, k: s.k + 1, l: s.l, stretch: .ours))
        }
        if joins(.ours), oursMay(.insert), writes(ours[s.j]) {
            next.append(State(i: s.i, j: s.j + 1, k: s.k, l: l, stretch: .ours))
        }
        if joins(.theirs), theirsMay(.delete), oursMay(.match) {
            next.append(State(i: s.i + 1, j: s.j + 1, k: s.k, l: s.l, stretch: .theirs))
        }
        if joins(.theirs), theirsMay(.insert), writes(theirs[s.k]) {
            next.append(State(i: s.i, j: s.j, k: s.k + 1, l: l, stretch: .theirs))
        }
        if joins(.both), oursMay(.delete), theirsMay(.delete) {
            next.append(State(i: s.i + 1, j: s.j, k: s.k, l: s.l, stretch: .both))
        }
        if joins(.both), oursMay(.insert), theirsMay(.insert), ours[s.j] == theirs[s.k], writes(ours[s.j]) {
            next.append(State(i: s.i, j: s.j + 1, k: s.k + 1, l: l, stretch: .both))
        }
        return next
    }
}
