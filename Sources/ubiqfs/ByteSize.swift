import Foundation

/// Sizes as people write them: `500M`, `20G`, `1.5GiB`, `4096` (binary units).
enum ByteSize {
    static func parse(_ text: String) -> Int64? {
        var number = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where number.hasSuffix(suffix) { number.removeLast(suffix.count) }
        var multiplier: Double = 1
        if let unit = number.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][unit] {
            multiplier = Double(1 << (10 * power))
            number.removeLast()
        }
        guard let value = Double(number), value >= 0, value * multiplier < 9e18 else { return nil }
        return Int64(value * multiplier)
    }
}
