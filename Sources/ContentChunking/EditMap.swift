/// Where sorted edits put things: each edit's bounds in the new content and how far the
/// unedited bytes after it moved, so an offset of the new content between edits can be
/// taken back to the old content.
struct EditMap {
    let edits: [ChunkEdit]
    let oldLength: Int
    /// Each edit's start and end in the new content.
    let newLowers: [Int]
    let newUppers: [Int]
    /// The shift of the bytes after each edit (all edits up to it).
    let shiftsAfter: [Int]

    var newLength: Int { oldLength + (shiftsAfter.last ?? 0) }

    init(edits: [ChunkEdit], oldLength: Int) {
        var (lowers, uppers, shifts, shift, end) = ([Int](), [Int](), [Int](), 0, 0)
        for edit in edits {
            precondition(edit.replaced.lowerBound >= end && edit.replaced.upperBound <= oldLength && edit.length >= 0,
                         "edits must be sorted, apart, and inside the old content")
            lowers.append(edit.replaced.lowerBound + shift)
            uppers.append(edit.replaced.lowerBound + shift + edit.length)
            shift += edit.shift
            shifts.append(shift)
            end = edit.replaced.upperBound
        }
        (self.edits, self.oldLength, newLowers, newUppers, shiftsAfter) = (edits, oldLength, lowers, uppers, shifts)
    }

    func shift(before edit: Int) -> Int {
        edit == 0 ? 0 : shiftsAfter[edit - 1]
    }

    /// The edit after which a new cut at `offset` puts the chunking back on the old cuts:
    /// `offset` lies between that edit (`first` or a later one) and the next, with
    /// unedited bytes after it, and is an old cut moved by the edits before it.
    func resynchronizes(at offset: Int, from first: Int, oldCuts: [Int]) -> Int? {
        let edit = newUppers.firstIndex(above: offset) - 1
        guard edit >= first, edit + 1 == edits.count ? offset < newLength : offset < newLowers[edit + 1] else { return nil }
        return oldCuts.sortedContains(offset - shiftsAfter[edit]) ? edit : nil
    }
}
