/// Where each object of a container lives in a store (docs/CONTAINER-FORMAT.md).
/// Keys are relative to the container's prefix.
public enum ContainerLayout {
    public static let infoKey = "container.json"
    public static let journalPrefix = "journal/"
    public static let blockPrefix = "blocks/"
    public static let checkpointPrefix = "checkpoints/"
    public static let packPrefix = "packs/"
    /// Versions and trash entries of compacted journal records (format 2).
    public static let historyPrefix = "history/"
    /// The collector's lease and lists (format 2).
    public static let gcPrefix = "gc/"
    /// Encrypted containers: the master key wrapped by each passphrase.
    public static let keyPrefix = "keys/"
    public static let leasePrefix = "gc/lease-"

    /// The largest object a reader takes whole at `key`, checked before it is read (a
    /// store that others write could hold gigabytes there): a record, checkpoint or other
    /// JSON object at most `RecordCodec.maxObjectSize` (a journal record at most
    /// `RecordCodec.maxRecordSize`), a block or pack at most 64 MiB (the largest block size
    /// readers accept), each with room for sealing.
    public static func largestObject(atKey key: String) -> Int64 {
        let plain: Int64 =
            if key.hasPrefix(blockPrefix) || key.hasPrefix(packPrefix) { 64 << 20 }
            else if key.hasPrefix(journalPrefix) { Int64(RecordCodec.maxRecordSize) }
            else { Int64(RecordCodec.maxObjectSize) }
        return plain + plain / 8 + (64 << 10)
    }

    public static func journalKey(_ seq: UInt64) -> String { journalPrefix + padded(seq) }
    public static func checkpointKey(_ seq: UInt64) -> String { checkpointPrefix + padded(seq) }
    public static func blockKey(_ hash: String) -> String { blockPrefix + hash }
    public static func packKey(_ pack: String) -> String { packPrefix + pack }
    public static func keyObjectKey(_ id: String) -> String { keyPrefix + id }
    /// `history/<first>-<last>`: what records first...last carried.
    public static func historyKey(first: UInt64, last: UInt64) -> String { historyPrefix + padded(first) + "-" + padded(last) }
    public static func leaseKey(_ number: UInt64) -> String { leasePrefix + padded(number) }
    public static func condemnedKey(_ run: String) -> String { gcPrefix + run + ".condemned" }

    /// The object holding a block's bytes; nil for a block carried inline by its record.
    public static func objectKey(of block: BlockReference) -> String? {
        block.inline == nil ? location(of: block).key : nil
    }

    /// Where a block's bytes are: its own object, or a range of a pack.
    public static func location(of block: BlockReference) -> (key: String, range: Range<Int64>?) {
        guard let pack = block.pack, let offset = block.offset else { return (blockKey(block.hash), nil) }
        return (packKey(pack), offset ..< offset + block.storedLength)
    }

    /// The sequence number of a journal or checkpoint key, or nil for anything else.
    public static func sequence(ofKey key: String, prefix: String) -> UInt64? {
        guard key.hasPrefix(prefix) else { return nil }
        let digits = key.dropFirst(prefix.count)
        guard digits.utf8.count == 20, digits.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return UInt64(digits)
    }

    /// The records a history key covers, or nil for anything else.
    public static func historyRange(ofKey key: String) -> ClosedRange<UInt64>? {
        guard key.hasPrefix(historyPrefix) else { return nil }
        let parts = key.dropFirst(historyPrefix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = sequence(ofKey: journalPrefix + parts[0], prefix: journalPrefix),
              let last = sequence(ofKey: journalPrefix + parts[1], prefix: journalPrefix), first >= 1, first <= last else { return nil }
        return first...last
    }

    /// 20 zero-padded digits, so lexicographic order (what stores list in) is numeric order.
    private static func padded(_ value: UInt64) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}
