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

    /// The most read into memory to find the cuts: past it the file is read whole, as it
    /// streams (a few MiB at a time).
    static let windowLimit = 64 << 20

    /// The pieces of the new content in order, and the bytes read to find them (which
    /// serve the pieces they cover); nil when the edits cannot be followed this way (the
    /// committed blocks not cut as `cutting` cuts, a length change inside the leading
    /// blocks, or more than half the file or `windowLimit` to read): the file is then
    /// read whole.
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
        let limit = min(newLength / 2, Self.windowLimit)
        // Each edit's window read first, so the chunker usually runs once.
        var windows = ByteWindows()
        for range in windowsAround(regionEdits, regionCuts, newLength: newLength - lead) {
            let window = range.lowerBound + lead..<range.upperBound + lead
            guard windows.count + window.count <= limit else { return nil }
            guard let bytes = try await read(window), bytes.count == window.count else { return nil }
            windows.add(bytes, at: window.lowerBound)
        }
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
                // Past an edit's window: four average chunks more.
                let lower = error.range.lowerBound + lead
                let upper = min(newLength, max(error.range.upperBound + lead, lower + 4 * cutting.chunking.average))
                guard windows.count + (upper - lower) <= limit else { return nil }
                guard let bytes = try await read(lower..<upper), bytes.count == upper - lower else { return nil }
                windows.add(bytes, at: lower)
            }
        }
    }

    /// The ranges of the new content (past the leading blocks) the chunker reads around
    /// each edit, merged: from the last old cut before it (where the chunker starts again)
    /// to four average chunks past its new bytes (it usually meets an old cut within one
    /// or two).
    private func windowsAround(_ edits: [ChunkEdit], _ oldCuts: [Int], newLength: Int) -> [Range<Int>] {
        let oldLength = oldCuts.last ?? 0
        var (ranges, shift) = ([Range<Int>](), 0)
        for edit in edits {
            let limit = min(edit.replaced.lowerBound, oldLength - 1)
            let cut = oldCuts.lastIndexAtMost(limit).map { oldCuts[$0] } ?? 0
            let lower = cut + shift
            let upper = min(newLength, edit.replaced.lowerBound + shift + edit.length + 4 * cutting.chunking.average)
            shift += edit.shift
            if let last = ranges.last, last.upperBound >= lower {
                ranges[ranges.count - 1] = last.lowerBound..<max(last.upperBound, upper)
            } else if lower < upper {
                ranges.append(lower..<upper)
            }
        }
        return ranges
    }
}

extension [Int] {
    /// In a sorted array, the index of the last element at most `value`.
    fileprivate func lastIndexAtMost(_ value: Int) -> Int? {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if self[middle] <= value { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }
}
