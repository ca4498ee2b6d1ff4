import Crypto
import Foundation

/// A file's blocks said as an edit of the blocks the journal gave it last (format 5): runs
/// copied from that list and runs of new references. A database edited in place has
/// thousands of small chunks of which a few change, so the record of each edit carries
/// those few instead of the whole list (docs/CONTAINER-FORMAT.md, "Splices").
public struct BlockSplice: Hashable, Sendable, Codable {
    /// One run of the result: `copy` = `[start, count]` of the base's blocks, or `new`
    /// references (exactly one of the two).
    public struct Run: Hashable, Sendable, Codable {
        public var copy: [Int]?
        public var new: [BlockReference]?

        public static func copy(from start: Int, count: Int) -> Run { Run(copy: [start, count], new: nil) }
        public static func new(_ blocks: [BlockReference]) -> Run { Run(copy: nil, new: blocks) }
    }

    /// How many blocks the base has.
    public var of: Int
    /// `BlockSplice.digest(of:)` of the base.
    public var base: String
    public var runs: [Run]

    /// The most blocks a spliced list may have (a hostile run list cannot make more).
    public static let maxBlocks = 1 << 20

    public init(of: Int, base: String, runs: [Run]) {
        (self.of, self.base, self.runs) = (of, base, runs)
    }

    /// The SHA-256 (hex) of each block's `hash:length` followed by a newline, in order:
    /// what a reader checks its base against (places play no part: a relocation does not
    /// change it).
    public static func digest(of blocks: [BlockReference]) -> String {
        var hasher = SHA256()
        for block in blocks { hasher.update(data: Array("\(block.hash):\(block.length)\n".utf8)) }
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: hasher.finalize().flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// The splice that makes `blocks` from `base`, or nil when it would not be shorter than
    /// the list itself (no block kept). A kept block must be the base's in every field, its
    /// place included, since the reader takes it from its own copy of the base.
    public static func make(from base: [BlockReference], to blocks: [BlockReference]) -> BlockSplice? {
        guard !base.isEmpty else { return nil }
        var first: [BlockReference: Int] = [:]
        for (index, block) in base.enumerated() where first[block] == nil { first[block] = index }
        var runs: [Run] = []
        var copy: (start: Int, count: Int)?
        var new: [BlockReference] = []
        var copied = 0
        func flush() {
            if let run = copy { runs.append(.copy(from: run.start, count: run.count)) }
            if !new.isEmpty { runs.append(.new(new)) }
            (copy, new) = (nil, [])
        }
        for block in blocks {
            if let run = copy, run.start + run.count < base.count, base[run.start + run.count] == block {
                copy = (run.start, run.count + 1)
            } else if let index = first[block] {
                flush()
                copy = (index, 1)
            } else {
                if copy != nil { flush() }
                new.append(block)
                continue
            }
            copied += 1
        }
        flush()
        guard copied > 0 else { return nil }
        return BlockSplice(of: base.count, base: digest(of: base), runs: runs)
    }

    /// The list this splice makes of `base`, or why it cannot: a base other than the one it
    /// was cut from, a run out of range or malformed, too many blocks.
    public func applied(to base: [BlockReference]) throws(RecordError) -> [BlockReference] {
        func refuse(_ why: String) -> RecordError { RecordError(code: .invalid, message: "splice refused: \(why)") }
        guard base.count == of, Self.digest(of: base) == self.base else {
            throw refuse("it edits a list of \(of) blocks this device does not have as the file's last (it has \(base.count))")
        }
        var blocks: [BlockReference] = []
        for run in runs {
            switch (run.copy, run.new) {
            case (let copy?, nil):
                guard copy.count == 2, copy[0] >= 0, copy[1] > 0, copy[0] <= base.count - copy[1] else { throw refuse("a copied run out of range") }
                guard blocks.count + copy[1] <= Self.maxBlocks else { throw refuse("more than \(Self.maxBlocks) blocks") }
                blocks += base[copy[0] ..< copy[0] + copy[1]]
            case (nil, let new?):
                guard !new.isEmpty, new.allSatisfy(\.isWellFormed) else { throw refuse("a new run empty or malformed") }
                guard blocks.count + new.count <= Self.maxBlocks else { throw refuse("more than \(Self.maxBlocks) blocks") }
                blocks += new
            default:
                throw refuse("a run is neither copied nor new")
            }
        }
        return blocks
    }

    /// The references the splice itself names (what collection must find in the record).
    public var newBlocks: [BlockReference] { runs.flatMap { $0.new ?? [] } }
}
