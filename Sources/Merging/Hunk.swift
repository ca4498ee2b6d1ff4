/// One change a side made to the base: the base's lines in `base` became the side's lines in
/// `side`. An insertion has an empty `base` range (at the base line it comes before), a
/// deletion an empty `side` range.
struct Hunk: Sendable, Equatable {
    var base: Range<Int>
    var side: Range<Int>

    /// The hunks that flags of changed lines describe: the lines left unchanged pair up in
    /// order (the first unchanged base line with the first unchanged side line...), and each
    /// run between two pairs where either file has changed lines is one hunk.
    static func hunks(baseChanged: [Bool], sideChanged: [Bool]) -> [Hunk] {
        var hunks: [Hunk] = []
        var (i, j) = (0, 0)
        while i < baseChanged.count || j < sideChanged.count {
            if i < baseChanged.count, j < sideChanged.count, !baseChanged[i], !sideChanged[j] {
                i += 1
                j += 1
                continue
            }
            let (baseStart, sideStart) = (i, j)
            while i < baseChanged.count, baseChanged[i] { i += 1 }
            while j < sideChanged.count, sideChanged[j] { j += 1 }
            precondition(i > baseStart || j > sideStart, "the files have different numbers of unchanged lines")
            hunks.append(Hunk(base: baseStart..<i, side: sideStart..<j))
        }
        return hunks
    }
}
