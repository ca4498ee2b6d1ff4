/// Small numbers for lines, the same number for equal lines, so that the search compares
/// numbers instead of bytes.
struct LineNumbering {
    /// A line's bytes, hashed in one call rather than byte by byte.
    private struct Key: Hashable {
        let bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (left: Key, right: Key) -> Bool { left.bytes == right.bytes }
    }

    private var numbers: [Key: Int32] = [:]

    /// The numbers of every line of a text.
    mutating func numbers(of lines: Lines) -> [Int32] {
        (0..<lines.count).map { number(lines[$0]) }
    }

    mutating func number(_ line: ArraySlice<UInt8>) -> Int32 {
        let key = Key(bytes: line)
        if let number = numbers[key] { return number }
        let number = Int32(numbers.count)
        numbers[key] = number
        return number
    }
}
