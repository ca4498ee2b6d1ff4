import GRDB

/// One SQLite value in the randomized test's model, compared exactly (1 and 1.0 differ) as
/// the merge compares rows; `sqliteEquals` is SQLite's own equality, which UNIQUE uses.
enum Value: Hashable, Comparable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let number): self = .integer(number)
        case .double(let number): self = .real(number)
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob([UInt8](data))
        }
    }

    /// The value as an SQL literal.
    var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let number): "\(number)"
        case .real(let number): "\(number)"
        case .text(let text): "'\(text.replacing("'", with: "''"))'"
        case .blob(let bytes): "x'" + bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "'"
        }
    }

    /// Equal as SQLite compares with `=` under BINARY: numbers by value across integer and
    /// real, NULL equal to nothing.
    func sqliteEquals(_ other: Value) -> Bool {
        switch (self, other) {
        case (.integer(let a), .real(let b)), (.real(let b), .integer(let a)): Double(a) == b
        case (.null, _), (_, .null): false
        default: self == other
        }
    }

    /// SQLite's order for the keys the test makes (integers, ASCII text): NULL, numbers, text, blobs.
    static func < (a: Value, b: Value) -> Bool {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): x < y
        case (.text(let x), .text(let y)): Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        default: a.rank < b.rank
        }
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }
}
