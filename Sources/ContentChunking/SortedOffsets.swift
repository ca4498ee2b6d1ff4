/// Binary search over sorted offsets (cuts, edit bounds), so a rechunk costs what is near
/// its edits, not a pass over every cut.
extension [Int] {
    /// The index of the first element greater than `value` (`count` when there is none).
    func firstIndex(above value: Int) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if self[middle] > value { high = middle } else { low = middle + 1 }
        }
        return low
    }

    func sortedContains(_ value: Int) -> Bool {
        let index = firstIndex(above: value)
        return index > 0 && self[index - 1] == value
    }
}
