/// Ranges of a file read into memory (`IncrementalCutting`), each served again from here.
struct ByteWindows: Sendable {
    private var windows: [(start: Int, bytes: [UInt8])] = []

    /// The bytes held.
    private(set) var count = 0

    mutating func add(_ bytes: [UInt8], at start: Int) {
        windows.append((start, bytes))
        count += bytes.count
    }

    /// The bytes of `range` if one window holds them all.
    func bytes(_ range: Range<Int>) -> [UInt8]? {
        for window in windows where window.start <= range.lowerBound && range.upperBound <= window.start + window.bytes.count {
            return Array(window.bytes[(range.lowerBound - window.start)..<(range.upperBound - window.start)])
        }
        return nil
    }
}
