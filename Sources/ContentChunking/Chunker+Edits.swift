/// Chunking after an edit without reading the whole content again: what a write needs when
/// it knows which ranges changed.
extension Chunker {
    /// The cuts of the content that `edits` made of the content cut at `oldCuts`, reading
    /// only around the edits: from the last old cut before each edit until a new cut past
    /// it is an old cut moved by the edits (usually within a chunk or two).
    ///
    /// - Parameters:
    ///   - edits: sorted by old offset, apart (they may touch), inside the old content.
    ///   - oldCuts: the old content's cuts, as `cuts(of:parameters:)` gave them with the
    ///     same `parameters`; the last is the old content's length.
    ///   - read: the bytes of the new content in a range; it must return all of them or throw.
    public static func cuts<Failure: Error>(
        after edits: [ChunkEdit], to oldCuts: [Int], parameters: ChunkerParameters,
        read: (Range<Int>) throws(Failure) -> [UInt8]
    ) throws(Failure) -> Rechunk {
        var rechunker = Rechunker(map: EditMap(edits: edits, oldLength: oldCuts.last ?? 0), oldCuts: oldCuts, parameters: parameters)
        try rechunker.run(read)
        return Rechunk(cuts: rechunker.cuts, read: rechunker.read, kept: rechunker.kept)
    }
}
