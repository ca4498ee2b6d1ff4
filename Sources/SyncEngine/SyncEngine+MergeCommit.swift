import GRDB
import ItemModel
import MetadataStore

/// The merges made here (`PendingMerges`) travel with the record that commits their file's
/// content (format 4's `merges`), and become versions once it is committed.
extension SyncEngine {
    /// The pending merges of the files whose content this plan uploads.
    func mergesToCommit(_ plan: PushPlan) async throws(SyncError) -> [MergeNote]? {
        let ids = plan.entries.compactMap { entry -> ItemID? in
            guard entry.upload != nil, !entry.nameOnly, case .upsert(let item) = entry.change, item.kind == .file else { return nil }
            return item.id
        }
        guard !ids.isEmpty else { return nil }
        let notes = try await calls.read("cannot read the merges to commit") { db in
            try ids.compactMap { id in try PendingMerges.find(id, db)?.note }
        }
        return notes.isEmpty ? nil : notes
    }

    /// Records the merges `record` committed as versions (`FileVersions.recordMerge`): they
    /// are no longer pending.
    nonisolated static func committedMerges(_ record: JournalRecord, _ plan: PushPlan, seq: UInt64, device: String, _ db: Database) throws {
        for note in record.merges ?? [] {
            try PendingMerges.remove(note.id, db)
            for entry in plan.entries {
                guard case .upsert(let item) = entry.change, item.id == note.id else { continue }
                try FileVersions.recordMerge(note, of: item, seq: seq, device: device, time: record.time, db)
            }
        }
    }
}
