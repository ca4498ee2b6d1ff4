import ItemModel
import MetadataStore

/// `history/<first>-<last>` (format 2): the file versions and trash entries within the
/// retention that journal records `first...last` carried, written by the compactor before
/// it deletes those records. A device that joins or rejoins from checkpoint `last` loads
/// it, so every device lists the same versions and trash (docs/CONTAINER-FORMAT.md).
struct HistoryObject: Codable, Sendable {
    /// One version of a file: `FileVersion` with the file's id.
    struct Version: Codable, Sendable {
        var id: ItemID
        var seq: UInt64
        var device: String
        var time: Int64
        var size: Int64
        var mtime: Int64
        var blocks: [BlockReference]

        init(id: ItemID, _ version: FileVersion) {
            (self.id, seq, device, time) = (id, version.seq, version.device, version.time)
            (size, mtime, blocks) = (version.size, version.mtime, version.blocks)
        }

        var version: FileVersion { FileVersion(seq: seq, device: device, time: time, size: size, mtime: mtime, blocks: blocks) }
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
            let ok = range.contains(version.seq) && version.id.isWellFormed && version.id != .root && version.size >= 0
                && version.blocks.allSatisfy(\.isWellFormed) && version.blocks.reduce(0) { $0 + $1.length } == version.size
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
