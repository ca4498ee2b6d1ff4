import ContentChunking
import ItemModel

/// One small edit of generated content, of the kinds people make: a few bytes inserted,
/// deleted or replaced, a line inserted or deleted.
struct GeneratedEdit: CustomStringConvertible {
    enum Kind: CaseIterable { case insertBytes, deleteBytes, replaceBytes, insertLine, deleteLine }

    var kind: Kind
    var edit: ChunkEdit
    var replacement: [UInt8]

    var description: String { "\(kind) of \(edit.replaced) by \(edit.length) bytes" }

    /// An edit of `kind` at a random place of `bytes` (a line edit at the start of a line).
    static func random(_ kind: Kind, in bytes: [UInt8], _ rng: inout SplitMix64) -> GeneratedEdit {
        let place = rng.below(bytes.count)
        switch kind {
        case .insertBytes, .deleteBytes, .replaceBytes:
            return bytesEdit(kind, at: place, before: bytes.count, &rng)
        case .insertLine:
            let start = lineStart(in: bytes, from: place)
            let line = TestContent.line(&rng)
            return GeneratedEdit(kind: kind, edit: ChunkEdit(replaced: start..<start, length: line.count), replacement: line)
        case .deleteLine:
            let start = lineStart(in: bytes, from: place)
            return GeneratedEdit(kind: kind, edit: ChunkEdit(replaced: start..<lineStart(in: bytes, from: start), length: 0), replacement: [])
        }
    }

    /// A few bytes inserted, deleted or replaced at `place`, touching nothing from `limit` on.
    static func bytesEdit(_ kind: Kind, at place: Int, before limit: Int, _ rng: inout SplitMix64) -> GeneratedEdit {
        let few = min(1 + rng.below(16), limit - place)
        switch kind {
        case .deleteBytes: return GeneratedEdit(kind: kind, edit: ChunkEdit(replaced: place..<(place + few), length: 0), replacement: [])
        case .replaceBytes:
            return GeneratedEdit(kind: kind, edit: ChunkEdit(replaced: place..<(place + few), length: few), replacement: TestContent.randomBytes(few, &rng))
        default:
            let count = 1 + rng.below(16)
            return GeneratedEdit(kind: .insertBytes, edit: ChunkEdit(replaced: place..<place, length: count), replacement: TestContent.randomBytes(count, &rng))
        }
    }

    /// Small edits at sorted places at least 64 bytes apart, for a rechunk of several.
    static func scattered(_ count: Int, in bytes: [UInt8], _ rng: inout SplitMix64) -> [GeneratedEdit] {
        let places = Set((0..<count).map { _ in rng.below(bytes.count) / 64 * 64 }).sorted()
        return places.enumerated().map { index, place in
            let limit = index + 1 < places.count ? places[index + 1] : bytes.count
            return bytesEdit(rng.pick([.insertBytes, .deleteBytes, .replaceBytes])!, at: place, before: limit, &rng)
        }
    }

    /// The offset just after the next newline at or after `offset` (the end when there is none).
    static func lineStart(in bytes: [UInt8], from offset: Int) -> Int {
        var index = offset
        while index < bytes.count, bytes[index] != 0x0A { index += 1 }
        return min(index + 1, bytes.count)
    }

    func applied(to bytes: [UInt8]) -> [UInt8] {
        TestContent.apply(edit, replacement, to: bytes)
    }

    /// Several edits (sorted, apart) applied together, in one pass over the content.
    static func apply(_ edits: [GeneratedEdit], to bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count + edits.reduce(0) { $0 + $1.edit.shift })
        var kept = 0
        for edit in edits {
            result += bytes[kept..<edit.edit.replaced.lowerBound]
            result += edit.replacement
            kept = edit.edit.replaced.upperBound
        }
        result += bytes[kept...]
        return result
    }
}
