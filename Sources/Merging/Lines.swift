/// A text cut into lines, each ending just after its `\n` (the last one may have none), so
/// the lines put back together are the bytes exactly: a `\r\n` line keeps its `\r`, and a
/// last line without a newline is a different line from the same text with one, as git
/// counts them.
struct Lines: Sendable {
    let bytes: [UInt8]
    /// Where each line ends (one past its last byte); a line starts where the one before ends.
    let ends: [Int]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var ends: [Int] = []
        ends.reserveCapacity(bytes.count / 32 + 1)
        for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            ends.append(offset + 1)
        }
        if (ends.last ?? 0) < bytes.count { ends.append(bytes.count) }
        self.ends = ends
    }

    var count: Int { ends.count }

    /// Where line `index` starts.
    func start(_ index: Int) -> Int { index == 0 ? 0 : ends[index - 1] }

    /// The bytes of line `index`.
    subscript(_ index: Int) -> ArraySlice<UInt8> { bytes[start(index)..<ends[index]] }

    /// The bytes of the lines in `range`.
    subscript(_ range: Range<Int>) -> ArraySlice<UInt8> {
        range.isEmpty ? [] : bytes[start(range.lowerBound)..<ends[range.upperBound - 1]]
    }
}
