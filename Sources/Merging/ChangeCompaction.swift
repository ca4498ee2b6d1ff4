/// Where a change sits when equal lines let it sit in several places (deleting one of two
/// equal lines, inserting a block after or before a copy of its last line), placed as git's
/// diff places it: a run of changed lines slides as far down as it can, unless on the way
/// it can line up with a change in the other file, where it goes back to the last such
/// place. Merges then see the same hunks git does, and so call the same edits conflicts.
/// Sliding keeps the script minimal: the unchanged lines stay the same lines, in order.
struct ChangeCompaction {
    /// A run of changed lines `start..<end`, after `gap` unchanged lines of its file.
    private struct Group {
        var start: Int, end: Int, gap: Int
    }

    private let lines: [Int32]
    private var changed: [Bool]
    /// Whether the other file has changed lines after its `gap`-th unchanged line.
    private let otherChangedAt: [Bool]
    private var work = 0
    private let budget: Int

    /// The changed lines of `lines` (numbered, `changed`) placed as git places them, given the
    /// changed lines of the file it is compared with; nil when sliding took more than
    /// `budget` steps.
    static func compacted(_ changed: [Bool], of lines: [Int32], other: [Bool], budget: Int) -> [Bool]? {
        var gaps = [false]
        for isChanged in other {
            if isChanged { gaps[gaps.count - 1] = true } else { gaps.append(false) }
        }
        var compaction = Self(lines: lines, changed: changed, otherChangedAt: gaps, budget: budget)
        return compaction.run() ? compaction.changed : nil
    }

    private init(lines: [Int32], changed: [Bool], otherChangedAt: [Bool], budget: Int) {
        (self.lines, self.changed, self.otherChangedAt, self.budget) = (lines, changed, otherChangedAt, budget)
    }

    private mutating func run() -> Bool {
        var (index, gap) = (0, 0)
        while index < changed.count {
            guard changed[index] else {
                (index, gap) = (index + 1, gap + 1)
                continue
            }
            var group = Group(start: index, end: index, gap: gap)
            while group.end < changed.count, changed[group.end] { group.end += 1 }
            place(&group)
            if work > budget { return false }
            (index, gap) = (group.end, group.gap)
        }
        return true
    }

    /// Slides a group up as far as it goes, then down as far as it goes, again while it
    /// grows by joining its neighbours; then back up to the last place in line with a
    /// change of the other file, if it passed one.
    private mutating func place(_ group: inout Group) {
        var size = 0, earliestEnd = 0
        var alignedEnd: Int?
        repeat {
            size = group.end - group.start
            while slideUp(&group) {}
            earliestEnd = group.end
            alignedEnd = otherChangedAt[group.gap] ? group.end : nil
            while slideDown(&group) {
                if otherChangedAt[group.gap] { alignedEnd = group.end }
            }
        } while size != group.end - group.start
        if group.end != earliestEnd, let alignedEnd {
            while group.end > alignedEnd, slideUp(&group) {}
        }
    }

    /// Moves the group one line up when the line above it equals its last line, joining
    /// the group above if it then touches it.
    private mutating func slideUp(_ group: inout Group) -> Bool {
        guard group.start > 0, lines[group.start - 1] == lines[group.end - 1] else { return false }
        work += 1
        changed[group.start - 1] = true
        changed[group.end - 1] = false
        group.start -= 1
        group.end -= 1
        group.gap -= 1
        while group.start > 0, changed[group.start - 1] { group.start -= 1 }
        return true
    }

    /// Moves the group one line down when the line below it equals its first line, joining
    /// the group below if it then touches it.
    private mutating func slideDown(_ group: inout Group) -> Bool {
        guard group.end < changed.count, lines[group.start] == lines[group.end] else { return false }
        work += 1
        changed[group.start] = false
        changed[group.end] = true
        group.start += 1
        group.end += 1
        group.gap += 1
        while group.end < changed.count, changed[group.end] { group.end += 1 }
        return true
    }
}
