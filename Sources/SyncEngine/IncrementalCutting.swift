import ContentChunking
import ItemModel

/// The blocks of a file of which only some ranges changed since its committed version
/// (`WrittenRanges`): which are committed blocks, unchanged and only moved, and which are
/// to be read, found by reading around the edits (`Chunker.cuts(after:to:)` past the
/// leading blocks) instead of the whole file. The cuts are those of the whole content.
struct IncrementalCutting {
    /// A block of the new content: its range, and the committed block of the same bytes
    /// if it is one (else it is read and stored).
    struct Piece: Equatable {
        let range: Range<Int>
        let kept: BlockReference?
    }

    /// The chunker asked for bytes not read yet.
    private struct Unread: Error {
        let range: Range<Int>
    }

    let cutting: BlockCutting

    /// The pieces of the new content in order, and the bytes read to find them (which
    /// serve the pieces they cover); nil when the edits cannot be followed this way (the
    /// committed blocks not cut as `cutting` cuts, a length change inside the leading
    /// blocks, or more than half the file to read): the file is then read whole.
    /// `read`: bytes of the new content, nil if the file is gone.
    func pieces(
        committed: [BlockReference], edits: [ChunkEdit], newLength: Int, read: (Range<Int>) async throws(SyncError) -> [UInt8]?
    ) async throws(SyncError) -> (pieces: [Piece], windows: ByteWindows)? {
        let oldCuts = committed.reduce(into: [Int]()) { $0.append(($0.last ?? 0) + Int($1.length)) }
        let leadCuts = cutting.leading.reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1) }
        let lead = leadCuts.last ?? 0
        guard oldCuts.count > leadCuts.count, Array(oldCuts.prefix(leadCuts.count)) == leadCuts, newLength > lead,
              edits.allSatisfy({ $0.shift == 0 || $0.replaced.lowerBound >= lead }) else { return nil }
        var pieces: [Piece] = []
        for (index, end) in leadCuts.enumerated() {
            let range = (index == 0 ? 0 : leadCuts[index - 1])..<end
            pieces.append(Piece(range: range, kept: edits.contains { $0.replaced.overlaps(range) } ? nil : committed[index]))
        }
        let regionEdits = edits.filter { $0.replaced.upperBound > lead || $0.replaced.lowerBound >= lead }.map { edit in
            let lower = max(edit.replaced.lowerBound, lead)
            return ChunkEdit(replaced: (lower - lead)..<(edit.replaced.upperBound - lead), length: edit.length - (lower - edit.replaced.lowerBound))
        }
        let regionCuts = oldCuts.dropFirst(leadCuts.count).map { $0 - lead }
        var windows = ByteWindows()
        while true {
            do throws(Unread) {
                let rechunk = try Chunker.cuts(after: regionEdits, to: regionCuts, parameters: cutting.chunking) { (range: Range<Int>) throws(Unread) in
                    guard let bytes = windows.bytes(range.lowerBound + lead..<range.upperBound + lead) else { throw Unread(range: range) }
                    return bytes
                }
                for (index, end) in rechunk.cuts.enumerated() {
                    let start = index == 0 ? 0 : rechunk.cuts[index - 1]
                    pieces.append(Piece(range: start + lead..<end + lead, kept: rechunk.kept[index].map { committed[leadCuts.count + $0] }))
                }
                return (pieces, windows)
            } catch {
                // A window from there of four average chunks (the chunker usually meets an
                // old cut within one or two past an edit); asked again for more if not.
                let lower = error.range.lowerBound + lead
                let upper = min(newLength, max(error.range.upperBound + lead, lower + 4 * cutting.chunking.average))
                guard windows.count + (upper - lower) <= newLength / 2 else { return nil }
                guard let bytes = try await read(lower..<upper), bytes.count == upper - lower else { return nil }
                windows.add(bytes, at: lower)
            }
        }
    }
}
