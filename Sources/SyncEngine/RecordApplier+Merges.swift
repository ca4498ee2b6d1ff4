import GRDB
import ItemModel
import MetadataStore

extension RecordApplier {
    /// Format 4: the merges a record committed (`MergeNote`). Each marks its file's new
    /// version merged and keeps the edits it took in as versions, held upsert or not (the
    /// versions are the file's whatever this device does with the content). A malformed
    /// note, one naming no file the record upserts, or a second one of a file, is refused
    /// alone (logged).
    mutating func take(merges record: JournalRecord, seq: UInt64) throws {
        guard let merges = record.merges, !merges.isEmpty else { return }
        guard record.format >= 4 else {
            outcome.refused.append("journal \(seq): merges in a format-\(record.format) record ignored")
            return
        }
        var files: [ItemID: ItemSnapshot] = [:]
        for case .upsert(let item) in record.ops where item.kind == .file { files[item.id] = item }
        var merged: Set<ItemID> = []
        for merge in merges {
            let checked: (MergeNote, ItemSnapshot)
            do throws(ItemModel.RecordError) {
                let note = try RecordValidator.sanitized(merge, seq: seq)
                guard merged.insert(note.id).inserted else {
                    throw ItemModel.RecordError(code: .invalid, message: "a second merge of \(note.id.rawValue) refused")
                }
                guard let raw = files[note.id] else {
                    throw ItemModel.RecordError(code: .invalid, message: "merge of \(note.id.rawValue) refused: the record commits no such file")
                }
                checked = (note, try RecordValidator.sanitized(raw))
            } catch {
                outcome.refused.append("journal \(seq): \(error.message)")
                continue
            }
            try FileVersions.recordMerge(checked.0, of: checked.1, seq: seq, device: committer.device, time: committer.time, db)
        }
    }
}
