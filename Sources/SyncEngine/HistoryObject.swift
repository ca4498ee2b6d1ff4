import ItemModel
import MetadataStore

/// `history/<first>-<last>` (format 2): the file versions and trash entries within the
/// retention that journal records `first...last` carried, written by the compactor before
/// it puts tombstones over those records. A device that joins or rejoins from checkpoint `last` loads
/// it, so every device lists the same versions and trash (docs/CONTAINER-FORMAT.md).
struct HistoryObject: Codable, Sendable {
    /// One version of a file: `FileVersion` with the file's id. The content of a file's
    /// newest version, when it is what checkpoint `last` has for the file (most files:
    /// unchanged for longer than the retention), is left out (`size`, `mtime`, `blocks`
    /// absent): the checkpoint says it, and the object stays a fraction of its size.
    struct Version: Codable, Sendable {
        var id: ItemID
        var seq: UInt64
        var device: String
        var time: Int64
        var size: Int64?
        var mtime: Int64?
        var blocks: [BlockReference]?

        init(id: ItemID, _ version: FileVersion, inCheckpoint: Bool) {
            (self.id, seq, device, time) = (id, version.seq, version.device, version.time)
            if !inCheckpoint { (size, mtime, blocks) = (version.size, version.mtime, version.blocks) }
        }

        /// The version, its content taken from `items` (the checkpoint's) where left out;
        /// nil if the checkpoint has no such file.
        func version(in items: [ItemID: ItemSnapshot]) -> FileVersion? {
            if let size, let mtime, let blocks { return FileVersion(seq: seq, device: device, time: time, size: size, mtime: mtime, blocks: blocks) }
            guard let item = items[id], item.kind == .file else { return nil }
            return FileVersion(seq: seq, device: device, time: time, size: item.size, mtime: item.mtime, blocks: item.blocks ?? [])
        }
    }

    var format: Int
    var first: UInt64
    var last: UInt64
    var versions: [Version]
    var trash: [TrashEntry]

    var key: String { ContainerLayout.historyKey(first: first, last: last) }

    /// What may be taken from a history object read from the store under `key`: its
    /// versions and entries that are well formed and inside its range; the refused ones
    /// are said in `refused`. Nil (and said) if the object itself does not match its key.
    static func decode(_ bytes: [UInt8], key: String, formats: ClosedRange<Int>, refused: inout [String]) -> HistoryObject? {
        guard var history = try? RecordCodec.decode(HistoryObject.self, from: bytes), formats.contains(history.format),
              history.first >= 1, history.first <= history.last, history.key == key
        else {
            refused.append("\(key) is not a readable history object; its versions and trash are not listed here")
            return nil
        }
        let range = history.first...history.last
        history.versions = history.versions.filter { version in
            let content = [version.size == nil, version.mtime == nil, version.blocks == nil]
            let ok = range.contains(version.seq) && version.id.isWellFormed && version.id != .root
                && (content.allSatisfy { $0 } || (!content.contains(true) && (0...RecordValidator.maxSize).contains(version.size!)
                    && version.blocks!.allSatisfy(\.isWellFormed) && Self.total(version.blocks!) == version.size))
            if !ok { refused.append("\(key): a version of \(version.id.rawValue.prefix(40)) at \(version.seq) refused: malformed") }
            return ok
        }
        history.trash = history.trash.compactMap { entry in
            do throws(RecordError) {
                return try sanitized(entry, in: range)
            } catch {
                refused.append("\(key): a trash entry of journal \(entry.seq) refused: \(error.message)")
                return nil
            }
        }
        return history
    }

    /// The blocks' lengths added up, or nil if they overflow (a forged object).
    private static func total(_ blocks: [BlockReference]) -> Int64? {
        var total: Int64 = 0
        for block in blocks {
            let (sum, overflow) = total.addingReportingOverflow(block.length)
            guard !overflow else { return nil }
            total = sum
        }
        return total
    }

    private static func sanitized(_ entry: TrashEntry, in range: ClosedRange<UInt64>) throws(RecordError) -> TrashEntry {
        guard range.contains(entry.seq), !entry.items.isEmpty else {
            throw RecordError(code: .invalid, message: "empty, or outside the object's records")
        }
        guard entry.folder.allSatisfy(ItemName.isValid) else { throw RecordError(code: .invalid, message: "a folder name not allowed on Linux") }
        var entry = entry
        var items: [ItemSnapshot] = []
        for item in entry.items { items.append(try RecordValidator.sanitized(item)) }
        entry.items = items
        return entry
    }
}
