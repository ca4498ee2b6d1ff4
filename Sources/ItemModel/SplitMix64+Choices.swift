/// Choices for randomized tests, from the seeded generator only.
extension SplitMix64 {
    /// A number in `0..<bound` (bound > 0). Our own, not the standard library's
    /// `random(in:using:)`, whose algorithm may change between Swift versions.
    public mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    public mutating func pick<T>(_ items: [T]) -> T? {
        items.isEmpty ? nil : items[below(items.count)]
    }

    public mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }

    public mutating func shuffled<T>(_ items: [T]) -> [T] {
        var result = items
        for index in stride(from: result.count - 1, to: 0, by: -1) {
            result.swapAt(index, below(index + 1))
        }
        return result
    }
}
