import ContentChunking
import Crypto
import Foundation
import ItemModel

/// Generated content for the chunker's tests, all from seeded generators: random bytes,
/// text with repeated lines, edits, and chunk identities as deduplication sees them. A run
/// replays with `UBIQFS_CHUNK_SEED=<seed>`.
enum TestContent {
    static let seed = ProcessInfo.processInfo.environment["UBIQFS_CHUNK_SEED"].flatMap(UInt64.init) ?? 20_260_041

    /// A generator for one test: the run's seed mixed with the test's own number.
    static func generator(_ test: UInt64) -> SplitMix64 {
        SplitMix64(seed: seed ^ (test &* 0x9E37_79B9_7F4A_7C15))
    }

    /// SplitMix64's words, little-endian, as many bytes as asked.
    static func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: (count + 7) / 8 * 8)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = rng.next().littleEndian }
        }
        return Array(bytes.prefix(count))
    }

    static let words = ["the", "chunk", "file", "sync", "store", "edit", "line", "block", "cloud", "device", "version", "a", "of", "to", "and", "=", "{", "}", "return", "let", "var", "42", "0x1f", "// TODO"]

    /// Text-like content: lines of a small vocabulary, a third of them repeats of earlier ones.
    static func text(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
        var pool: [[UInt8]] = []
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 200)
        while bytes.count < count {
            if !pool.isEmpty, rng.chance(33) {
                bytes += pool[rng.below(pool.count)]
            } else {
                let line = line(&rng)
                if pool.count < 4_000 { pool.append(line) }
                bytes += line
            }
        }
        return Array(bytes.prefix(count))
    }

    static let wordBytes = words.map { Array($0.utf8) }

    /// An indented line of 1 to 12 words.
    static func line(_ rng: inout SplitMix64) -> [UInt8] {
        var line = [UInt8](repeating: 0x20, count: 4 * rng.below(4))
        for index in 0..<(1 + rng.below(12)) {
            if index > 0 { line.append(0x20) }
            line += wordBytes[rng.below(wordBytes.count)]
        }
        line.append(0x0A)
        return line
    }

    /// The identity of each chunk as deduplication sees it: its SHA-256.
    static func chunkHashes(_ bytes: [UInt8], _ cuts: [Int]) -> [SHA256.Digest] {
        bytes.withUnsafeBufferPointer { buffer in
            zip([0] + cuts, cuts).map { SHA256.hash(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[$0..<$1]))) }
        }
    }

    /// The chunks of the new content that deduplication against the old does not find: how
    /// many, and their bytes.
    static func newChunks(old: [UInt8], oldCuts: [Int], new: [UInt8], newCuts: [Int]) -> (count: Int, bytes: Int) {
        let known = Set(chunkHashes(old, oldCuts))
        var (count, bytes) = (0, 0)
        for (index, hash) in chunkHashes(new, newCuts).enumerated() where !known.contains(hash) {
            count += 1
            bytes += newCuts[index] - (index == 0 ? 0 : newCuts[index - 1])
        }
        return (count, bytes)
    }

    /// Fixed-size blocks: the control that content-defined chunks must beat.
    static func fixedCuts(_ length: Int, size: Int) -> [Int] {
        length == 0 ? [] : Array(stride(from: size, to: length, by: size)) + [length]
    }

    static func apply(_ edit: ChunkEdit, _ replacement: [UInt8], to bytes: [UInt8]) -> [UInt8] {
        precondition(replacement.count == edit.length)
        var result = bytes
        result.replaceSubrange(edit.replaced, with: replacement)
        return result
    }
}
