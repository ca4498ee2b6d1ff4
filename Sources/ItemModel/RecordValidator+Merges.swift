/// The format-4 `merges` of a record, checked one by one: a malformed note is refused
/// alone (its inputs are not listed as versions), never the record.
extension RecordValidator {
    /// Device names an input may carry, in bytes.
    public static let maxDeviceName = 255

    /// The note as it may be applied by record `seq`, or an error saying why it is refused.
    public static func sanitized(_ merge: MergeNote, seq: UInt64) throws(RecordError) -> MergeNote {
        func refuse(_ why: String) -> RecordError {
            RecordError(code: .invalid, message: "merge of \(merge.id.rawValue.prefix(40)) refused: \(why)")
        }
        guard merge.id.isWellFormed, merge.id != .root else { throw refuse("malformed id") }
        guard merge.base >= 1, merge.base < merge.with, merge.with < seq else {
            throw refuse("base \(merge.base) and with \(merge.with) must be earlier records, base first")
        }
        guard (1...16).contains(merge.kind.utf8.count), merge.kind.utf8.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }) else {
            throw refuse("malformed kind")
        }
        guard (1...MergeNote.maxInputs).contains(merge.inputs.count) else { throw refuse("\(merge.inputs.count) inputs") }
        for input in merge.inputs {
            guard (1...maxDeviceName).contains(input.device.utf8.count) else { throw refuse("malformed device name") }
            guard mtimes.contains(input.time), mtimes.contains(input.mtime) else { throw refuse("time out of range") }
            guard (0...maxSize).contains(input.size), input.blocks.allSatisfy(\.isWellFormed) else { throw refuse("malformed content") }
            guard total(input.blocks) == input.size else { throw refuse("block lengths do not add up to the size") }
        }
        return merge
    }

    /// The blocks' lengths added up, or nil if they overflow (a forged record).
    public static func total(_ blocks: [BlockReference]) -> Int64? {
        var total: Int64 = 0
        for block in blocks {
            let (sum, overflow) = total.addingReportingOverflow(block.length)
            guard !overflow else { return nil }
            total = sum
        }
        return total
    }
}
