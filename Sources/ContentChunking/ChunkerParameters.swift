import Foundation
import Crypto

/// What decides where content is cut: the sizes and the gear table. Two clients cut the same
/// bytes the same way exactly when their parameters are equal, so everything here is format.
///
/// The rule, for a chunk starting at some offset of the content (`A` = `average`, `A = 2^b`):
/// - `minimum` is `A / 4` and `maximum` is `4 * A` (bytes).
/// - The chunk's first `minimum` bytes are skipped (never hashed). A 64-bit hash `h` starts
///   at 0; each following byte `x` of the chunk, in order, makes
///   `h = (h << 1) + gear[x]` (mod 2^64). Taking in the byte at chunk offset `i` makes the
///   chunk `L = i + 1` bytes long, and the chunk ends there when
///   `h & (L < A ? maskStrict : maskLoose) == 0`, or when `L == maximum`.
/// - `maskStrict` has the top `b + 2` bits of the 64 set, `maskLoose` the top `b - 2`
///   (FastCDC's normalized chunking, level 2: cuts are rarer before the average and more
///   likely after it, so sizes gather around it; the top bits are the ones that depend on
///   the last 64 bytes, the widest window a gear hash has).
/// - Content that ends first ends the last chunk, whatever its length. Empty content has no
///   chunk. The next chunk starts where one ends, with `h` at 0 again.
///
/// So every chunk but the last is longer than `minimum` and at most `maximum` bytes; on
/// random content they average about 1.14 `A` (the skipped minimum adds to the mean).
public struct ChunkerParameters: Sendable, Hashable {
    /// The averages chunkers accept: 256 bytes ... 256 MiB, powers of two.
    public static let averageBits = 8...28

    /// `A`: the size chunks gather around (a power of two).
    public let average: Int
    /// Bytes skipped at the start of every chunk before hashing (`A / 4`).
    public let minimum: Int
    /// The longest chunk (`4 A`).
    public let maximum: Int
    /// One pseudorandom 64-bit number per byte value (see `unkeyed` and `keyed`).
    public let gear: [UInt64]

    /// The mask that applies while a chunk is shorter than `average`: top `b + 2` bits.
    let maskStrict: UInt64
    /// The mask that applies from `average` bytes on: top `b - 2` bits.
    let maskLoose: UInt64

    /// For plain containers: a public table, `gear[x]` = the first 8 bytes, read big-endian,
    /// of SHA-256 of the ASCII bytes `ubiqfs-chunker-gear-1` followed by the one byte `x`.
    public static func unkeyed(average: Int) throws(ChunkingError) -> ChunkerParameters {
        try ChunkerParameters(average: average, gear: (0...255).map { value in
            word(SHA256.hash(data: message(for: UInt8(value))))
        })
    }

    /// For encrypted containers, so cuts say nothing of the bytes to whoever lacks `key`:
    /// `gear[x]` = the first 8 bytes, read big-endian, of HMAC-SHA256 under `key` of the same
    /// message as `unkeyed`'s. `key` should be a subkey kept for chunking, not a key that
    /// seals or names anything.
    public static func keyed(_ key: some ContiguousBytes, average: Int) throws(ChunkingError) -> ChunkerParameters {
        let symmetric = SymmetricKey(data: key)
        return try ChunkerParameters(average: average, gear: (0...255).map { value in
            word(HMAC<SHA256>.authenticationCode(for: message(for: UInt8(value)), using: symmetric))
        })
    }

    private init(average: Int, gear: [UInt64]) throws(ChunkingError) {
        guard average > 0, average & (average - 1) == 0, Self.averageBits.contains(average.trailingZeroBitCount) else {
            throw ChunkingError(code: .invalidParameters, message: "a chunk average of \(average) bytes is no power of two from 2^8 to 2^28")
        }
        let bits = average.trailingZeroBitCount
        self.average = average
        minimum = average / 4
        maximum = average * 4
        self.gear = gear
        maskStrict = ~UInt64(0) << (64 - (bits + 2))
        maskLoose = ~UInt64(0) << (64 - (bits - 2))
    }

    private static func message(for value: UInt8) -> [UInt8] {
        Array("ubiqfs-chunker-gear-1".utf8) + [value]
    }

    private static func word(_ digest: some Sequence<UInt8>) -> UInt64 {
        digest.prefix(8).reduce(0) { ($0 << 8) | UInt64($1) }
    }
}
