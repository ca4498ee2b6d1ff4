/// Cuts the bytes of a streamed run of neighbouring blobs into the blobs: each gathered as
/// its pieces come and handed on whole once its last byte is in, the gaps between them
/// dropped. It holds one blob's bytes at most, and copies each byte once.
struct RunAssembler {
    /// The blobs' places, as offsets of the stream (not overlapping).
    let ranges: [Range<Int64>]
    /// Where the next piece starts.
    private(set) var position: Int64
    /// The blobs not yet whole, in offset order.
    private var waiting: ArraySlice<Int>
    /// The first waiting blob's bytes so far.
    private var blob: [UInt8] = []

    init(_ ranges: [Range<Int64>], from start: Int64) {
        self.ranges = ranges
        position = start
        waiting = ranges.indices.sorted { ranges[$0].lowerBound < ranges[$1].lowerBound }[...]
    }

    /// Every blob was whole.
    var isComplete: Bool { waiting.isEmpty }

    /// The blobs this piece makes whole (their index in `ranges`, and bytes), in offset order.
    mutating func take(_ piece: [UInt8]) -> [(index: Int, bytes: [UInt8])] {
        var rest = piece[...]
        var whole: [(index: Int, bytes: [UInt8])] = []
        while let next = waiting.first {
            let range = ranges[next]
            if position < range.lowerBound {
                guard !rest.isEmpty else { break }
                let skipped = Int(min(range.lowerBound - position, Int64(rest.count)))
                rest = rest.dropFirst(skipped)
                position += Int64(skipped)
                continue
            }
            if blob.isEmpty { blob.reserveCapacity(Int(range.upperBound - range.lowerBound)) }
            let taken = Int(max(0, min(range.upperBound - position, Int64(rest.count))))
            blob.append(contentsOf: rest.prefix(taken))
            rest = rest.dropFirst(taken)
            position += Int64(taken)
            guard position >= range.upperBound else { break }
            waiting.removeFirst()
            whole.append((next, blob))
            blob = []
        }
        position += Int64(rest.count)
        return whole
    }
}
