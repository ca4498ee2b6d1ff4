import ItemModel

/// What a `FaultyStore` does to the calls it passes on, in the spirit of Apple's Network
/// Link Conditioner. Written as `latency=300ms,bandwidth=2M,errors=0.1,hang,blocks`:
/// - `latency=D`: every call waits D first (`ms` or `s`; a bare number is seconds);
/// - `bandwidth=B`: data moves at B bytes per second (`K`, `M`, `G` suffixes);
/// - `errors=P`: each call fails as unreachable with probability P (0...1), seeded;
/// - `throttle=P`: each call is throttled with probability P (0...1), as S3's `SlowDown`:
///   it waits 100 ms more and is counted in the store's `StoreCongestion`;
/// - `hang`: every call waits until cancelled, like a peer that stopped answering;
/// - `blocks`: only content transfers (blocks and packs) are affected (a slow network for content only).
public struct StoreFaults: Sendable, Equatable, CustomStringConvertible {
    public var latency: Duration = .zero
    public var bytesPerSecond: Int64?
    public var errorRate: Double = 0
    /// Writes that happen but whose reply is lost (the caller sees an error): a commit
    /// must then not be applied twice.
    public var lostReplyRate: Double = 0
    public var throttleRate: Double = 0
    public var hang = false
    public var blocksOnly = false
    public var seed: UInt64 = 1

    public init() {}

    public init(parsing text: String) throws(StoreError) {
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1).map(String.init)
            let value = pieces.count == 2 ? pieces[1] : nil
            switch (pieces[0], value) {
            case ("latency", let value?):
                guard let duration = Self.duration(value) else { throw Self.bad(part) }
                latency = duration
            case ("bandwidth", let value?):
                guard let rate = Self.bytes(value), rate > 0 else { throw Self.bad(part) }
                bytesPerSecond = rate
            case ("errors", let value?):
                guard let rate = Double(value), (0...1).contains(rate) else { throw Self.bad(part) }
                errorRate = rate
            case ("lost", let value?):
                guard let rate = Double(value), (0...1).contains(rate) else { throw Self.bad(part) }
                lostReplyRate = rate
            case ("throttle", let value?):
                guard let rate = Double(value), (0...1).contains(rate) else { throw Self.bad(part) }
                throttleRate = rate
            case ("seed", let value?):
                guard let number = UInt64(value) else { throw Self.bad(part) }
                seed = number
            case ("hang", nil): hang = true
            case ("blocks", nil): blocksOnly = true
            default: throw Self.bad(part)
            }
        }
    }

    public var description: String {
        var parts: [String] = []
        // What `init(parsing:)` reads back.
        if latency > .zero {
            let (seconds, attoseconds) = latency.components
            parts.append("latency=\(seconds * 1000 + attoseconds / 1_000_000_000_000_000)ms")
        }
        if let bytesPerSecond { parts.append("bandwidth=\(bytesPerSecond)") }
        if errorRate > 0 { parts.append("errors=\(errorRate)") }
        if lostReplyRate > 0 { parts.append("lost=\(lostReplyRate)") }
        if throttleRate > 0 { parts.append("throttle=\(throttleRate)") }
        if hang { parts.append("hang") }
        if blocksOnly { parts.append("blocks") }
        return parts.joined(separator: ",")
    }

    private static func bad(_ part: String) -> StoreError {
        StoreError(code: .configuration, message: "store fault '\(part)' is not one of latency=D, bandwidth=B, errors=P, lost=P, throttle=P, seed=N, hang, blocks")
    }

    static func duration(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Double(text.dropLast(2)), value >= 0 { return .milliseconds(value) }
        let number = text.hasSuffix("s") ? String(text.dropLast()) : text
        guard let value = Double(number), value >= 0 else { return nil }
        return .milliseconds(value * 1000)
    }

    static func bytes(_ text: String) -> Int64? {
        let units: [Character: Double] = ["K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024]
        var number = text.uppercased()
        var scale = 1.0
        if let last = number.last, let unit = units[last] {
            scale = unit
            number.removeLast()
        }
        guard let value = Double(number), value >= 0 else { return nil }
        return Int64(value * scale)
    }
}
