/// The walk behind `Chunker.cuts(after:to:parameters:read:)`: old cuts are kept up to the
/// last one before an edit, the new content is chunked from there, and as soon as a new cut
/// past the edit is an old cut moved by the edits, the old cuts are kept again up to the
/// next edit. A cut resets the chunker, so the chunks after such a cut are the old ones
/// until bytes change again.
struct Rechunker {
    let map: EditMap
    let oldCuts: [Int]
    let parameters: ChunkerParameters
    private(set) var cuts: [Int] = []
    private(set) var read: [Range<Int>] = []
    /// New chunks that are old ones moved (new index to old index): their bytes were not read.
    private(set) var kept: [Int: Int] = [:]
    /// A cut of the new content (or 0): `cuts` holds every cut up to it.
    private var position = 0

    init(map: EditMap, oldCuts: [Int], parameters: ChunkerParameters) {
        (self.map, self.oldCuts, self.parameters) = (map, oldCuts, parameters)
    }

    mutating func run<Failure: Error>(_ readBytes: (Range<Int>) throws(Failure) -> [UInt8]) throws(Failure) {
        var edit = 0
        while edit < map.edits.count {
            // The content's end is no content-defined cut: an append must chunk its last chunk again.
            keepOldCuts(through: min(map.edits[edit].replaced.lowerBound, map.oldLength - 1), shift: map.shift(before: edit))
            edit = try chunk(from: edit, readBytes)
        }
        keepOldCuts(through: map.oldLength, shift: map.newLength - map.oldLength)
    }

    /// Keeps the old cuts after `position` up to `limit` (old offsets), moved by `shift`.
    private mutating func keepOldCuts(through limit: Int, shift: Int) {
        var index = oldCuts.firstIndex(above: position - shift)
        while index < oldCuts.count, oldCuts[index] <= limit {
            let start = cuts.last ?? 0
            if start == (index == 0 ? 0 : oldCuts[index - 1]) + shift { kept[cuts.count] = index }
            cuts.append(oldCuts[index] + shift)
            index += 1
        }
        position = cuts.last ?? 0
    }

    /// Chunks the new content from `position` until it falls back on the old cuts after
    /// edit `first` or a later one, or until it ends; returns the first edit not yet passed.
    private mutating func chunk<Failure: Error>(from first: Int, _ readBytes: (Range<Int>) throws(Failure) -> [UInt8]) throws(Failure) -> Int {
        var chunker = Chunker(parameters: parameters, offset: position)
        var offset = position
        while offset < map.newLength {
            let range = offset..<min(offset + parameters.average, map.newLength)
            let bytes = try readBytes(range)
            precondition(bytes.count == range.count, "read must return every byte asked for, or throw")
            noteRead(range)
            for cut in chunker.append(bytes) {
                cuts.append(cut)
                position = cut
                if let edit = map.resynchronizes(at: cut, from: first, oldCuts: oldCuts) { return edit + 1 }
            }
            offset = range.upperBound
        }
        if let last = chunker.finish() { cuts.append(last) }
        position = map.newLength
        return map.edits.count
    }

    private mutating func noteRead(_ range: Range<Int>) {
        if let last = read.last, last.upperBound == range.lowerBound {
            read[read.count - 1] = last.lowerBound..<range.upperBound
        } else {
            read.append(range)
        }
    }
}
