/// Both sides' hunks applied to the base. Hunks of the two sides that overlap or touch (a
/// change on each side to the same or adjacent lines, an insertion at the same place, as
/// git merge-file counts a conflict) form one region, joined transitively; a region is
/// clean when only one side changed it, or when both sides left it the same. Nothing
/// depends on which side is "ours": the result is the same bytes either way round.
struct ThreeWayMerge {
    let base: Lines
    let ours: Lines
    let theirs: Lines
    let ourHunks: [Hunk]
    let theirHunks: [Hunk]

    /// The merged text, or why there is none.
    func merged() throws(MergeError) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(max(ours.bytes.count, theirs.bytes.count))
        var copied = 0
        // Outside hunks, a side's line is the base's line plus its shift.
        var (ourShift, theirShift) = (0, 0)
        var (o, t) = (0, 0)
        while o < ourHunks.count || t < theirHunks.count {
            let start = min(o < ourHunks.count ? ourHunks[o].base.lowerBound : .max, t < theirHunks.count ? theirHunks[t].base.lowerBound : .max)
            var end = start
            let (firstOurs, firstTheirs) = (o, t)
            while true {
                if o < ourHunks.count, ourHunks[o].base.lowerBound <= end {
                    end = max(end, ourHunks[o].base.upperBound)
                    o += 1
                } else if t < theirHunks.count, theirHunks[t].base.lowerBound <= end {
                    end = max(end, theirHunks[t].base.upperBound)
                    t += 1
                } else {
                    break
                }
            }
            result += base[copied..<start]
            let ourSpan = (start + ourShift)..<(end + ourShift + Self.growth(ourHunks[firstOurs..<o]))
            let theirSpan = (start + theirShift)..<(end + theirShift + Self.growth(theirHunks[firstTheirs..<t]))
            if t == firstTheirs || ours[ourSpan] == theirs[theirSpan] {
                result += ours[ourSpan]
            } else if o == firstOurs {
                result += theirs[theirSpan]
            } else {
                throw MergeError(code: .overlap, message: "both sides changed the text at base lines \(start + 1)...\(max(start + 1, end)) differently")
            }
            ourShift += Self.growth(ourHunks[firstOurs..<o])
            theirShift += Self.growth(theirHunks[firstTheirs..<t])
            copied = end
        }
        result += base[copied..<base.count]
        return result
    }

    /// How many lines longer the hunks make a side.
    private static func growth(_ hunks: ArraySlice<Hunk>) -> Int {
        hunks.reduce(0) { $0 + $1.side.count - $1.base.count }
    }
}
