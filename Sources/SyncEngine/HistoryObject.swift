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
        /// Format 4: k > 0 for the k-th input of the merge `seq` committed (absent: 0).
        var input: Int?
        /// Format 4: on a merged version, the version it merged with and how.
        var mergedWith: UInt64?
        var mergeKind: String?

        init(id: ItemID, _ version: FileVersion, inCheckpoint: Bool) {
            (self.id, seq, device, time) = (id, version.seq, version.device, version.time)
            if !inCheckpoint || version.input > 0 { (size, mtime, blocks) = (version.size, version.mtime, version.blocks) }
            (input, mergedWith, mergeKind) = (version.input > 0 ? version.input : nil, version.mergedWith, version.mergeKind)
        }

        /// The version, its content taken from `items` (the checkpoint's) where left out;
        /// nil if the checkpoint has no such file.
        func version(in items: [ItemID: ItemSnapshot]) -> FileVersion? {
            var version: FileVersion
            if let size, let mtime, let blocks {
                version = FileVersion(seq: seq, device: device, time: time, size: size, mtime: mtime, blocks: blocks, input: input ?? 0)
            } else {
                guard input == nil, let item = items[id], item.kind == .file else { return nil }
                version = FileVersion(seq: seq, device: device, time: time, size: item.size, mtime: item.mtime, blocks: item.blocks ?? [])
            }
            (version.mergedWith, version.mergeKind) = (mergedWith, mergeKind)
            return version
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
            let merge = (version.input.map { (1...MergeNote.maxInputs).contains($0) && version.size != nil } ?? true)
                && (version.mergedWith.map { $0 >= 1 && $0 < version.seq } ?? true) && (version.mergeKind?.utf8.count ?? 0) <= 16
            let ok = range.contains(version.seq) && version.id.isWellFormed && version.id != .root && merge
                && (content.allSatisfy { $0 } || (!content.contains(true) && (0...RecordValidator.maxSize).contains(version.size!)
                    && version.blocks!.allSatisfy(\.isWellFormed) && RecordValidator.total(version.blocks!) == version.size))
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
