/// Cuts content into content-defined chunks (`ChunkerParameters` says where) as it is fed,
/// so a file is chunked while it streams from disk without being held: the state is three
/// numbers, no bytes. Offsets are of the whole content, counted from `init`'s `offset`.
///
/// A cut is the offset where a chunk ends; the chunks are the ranges between consecutive
/// cuts, the first from the starting offset, and the last cut is the content's end.
public struct Chunker: Sendable {
    public let parameters: ChunkerParameters
    /// Offset of the next byte to take in.
    public private(set) var position: Int
    /// Offset where the current chunk began.
    private var chunkStart: Int
    private var hash: UInt64 = 0

    /// `offset`: where the content fed starts, which must be a cut (or 0) for the cuts to be
    /// the whole content's.
    public init(parameters: ChunkerParameters, offset: Int = 0) {
        self.parameters = parameters
        position = offset
        chunkStart = offset
    }

    /// Takes in the next bytes of the content; returns the cuts they completed, in order.
    public mutating func append(_ bytes: some Collection<UInt8>) -> [Int] {
        var cuts: [Int] = []
        if bytes.withContiguousStorageIfAvailable({ scan($0, into: &cuts) }) == nil {
            Array(bytes).withUnsafeBufferPointer { scan($0, into: &cuts) }
        }
        return cuts
    }

    /// The content ended: the cut that ends its last chunk, if bytes are left in it.
    public mutating func finish() -> Int? {
        guard position > chunkStart else { return nil }
        chunkStart = position
        hash = 0
        return position
    }

    /// Every cut of `bytes` at once.
    public static func cuts(of bytes: some Collection<UInt8>, parameters: ChunkerParameters) -> [Int] {
        var chunker = Chunker(parameters: parameters)
        var cuts = chunker.append(bytes)
        if let last = chunker.finish() { cuts.append(last) }
        return cuts
    }

    /// The hot loop: skips each chunk's first `minimum` bytes, then hashes byte by byte
    /// through the strict stretch and the loose one until a mask matches or `maximum` is hit.
    private mutating func scan(_ buffer: UnsafeBufferPointer<UInt8>, into cuts: inout [Int]) {
        guard let base = buffer.baseAddress else { return }
        let (minimum, average, maximum) = (parameters.minimum, parameters.average, parameters.maximum)
        let (strict, loose) = (parameters.maskStrict, parameters.maskLoose)
        var (position, chunkStart, hash) = (self.position, self.chunkStart, self.hash)
        parameters.gear.withUnsafeBufferPointer { table in
            let gear = table.baseAddress!
            var index = 0
            while index < buffer.count {
                let length = position - chunkStart
                let available = buffer.count - index
                let taken: Int
                var cut = false
                if length < minimum {
                    taken = min(minimum - length, available)
                } else {
                    // Bytes that make the chunk shorter than `average` use the strict mask.
                    let inStrict = length < average - 1
                    let limit = min(available, inStrict ? average - 1 - length : maximum - length)
                    let matched: Bool
                    (taken, matched) = Self.seek(base + index, limit, &hash, inStrict ? strict : loose, gear)
                    cut = matched || length + taken == maximum
                }
                index += taken
                position += taken
                if cut {
                    cuts.append(position)
                    chunkStart = position
                    hash = 0
                }
            }
        }
        (self.position, self.chunkStart, self.hash) = (position, chunkStart, hash)
    }

    /// Hashes up to `count` bytes, stopping after the first whose hash matches `mask`: how
    /// many it took in, and whether it stopped on a match.
    @inline(__always)
    private static func seek(
        _ bytes: UnsafePointer<UInt8>, _ count: Int, _ hash: inout UInt64, _ mask: UInt64, _ gear: UnsafePointer<UInt64>
    ) -> (taken: Int, matched: Bool) {
        var h = hash
        var index = 0
        while index < count {
            h = (h &<< 1) &+ gear[Int(bytes[index])]
            index += 1
            if h & mask == 0 {
                hash = h
                return (index, true)
            }
        }
        hash = h
        return (count, false)
    }
}
