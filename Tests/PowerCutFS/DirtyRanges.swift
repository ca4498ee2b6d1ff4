/// The byte ranges of one file written since its last data sync, sorted and merged: an
/// fsync persists only these, so a SQLite commit costs its changed pages, not the whole file.
struct DirtyRanges {
    private(set) var ranges: [Range<Int>] = []

    var isEmpty: Bool { ranges.isEmpty }

    /// Adds `range`, merging it with every range it overlaps or touches.
    mutating func insert(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        // First range that ends at or after the new one starts (touching ranges merge too).
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < range.lowerBound { low = middle + 1 } else { high = middle }
        }
        var end = low
        var merged = range
        while end < ranges.count, ranges[end].lowerBound <= merged.upperBound {
            merged = min(merged.lowerBound, ranges[end].lowerBound)..<max(merged.upperBound, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(low..<end, with: [merged])
    }

    /// Drops what lies at or past `size` (the file was cut there: those bytes are gone).
    mutating func clip(to size: Int) {
        while let last = ranges.last, last.upperBound > size {
            ranges.removeLast()
            if last.lowerBound < size { ranges.append(last.lowerBound..<size) }
        }
    }

    mutating func removeAll() {
        ranges.removeAll()
    }
}
