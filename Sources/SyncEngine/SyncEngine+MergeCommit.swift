import ContainerStore
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
        let pending = try await calls.read("cannot read the merges to commit") { db in
            try ids.compactMap { id in try PendingMerges.find(id, db) }
        }
        var notes: [MergeNote] = []
        for (note, merged) in pending { notes.append(try await inputsKeptSafe(note, merged: merged)) }
        return notes.isEmpty ? nil : notes
    }

    /// `note`, its inputs' objects safe to name (rule W): an input stored before a
    /// collector condemned it (unnamed until this record: a device offline meanwhile) is
    /// fetched while it is still there and stored anew; one already swept is lost, and
    /// said so. The pending merge is kept as changed.
    private func inputsKeptSafe(_ note: MergeNote, merged: String) async throws(SyncError) -> MergeNote {
        guard format.current >= 2 else { return note }
        let condemned = try await self.condemned.current(calls)
        var kept = note
        kept.inputs = []
        var checked: [String: Bool] = [:]
        for input in note.inputs {
            let keys = Set(input.blocks.compactMap(ContainerLayout.objectKey(of:)))
            var atRisk = keys.contains(where: condemned.contains)
            if !atRisk { atRisk = try await anyMissing(keys, checked: &checked) }
            guard atRisk else {
                kept.inputs.append(input)
                continue
            }
            do {
                var safe = input
                safe.blocks = try await uploader.store(try await content(input.blocks, of: "an edit merged into \(note.id)"), name: "an edit merged")
                kept.inputs.append(safe)
            } catch {
                guard error.code == .notFound || error.code == .corrupt else { throw error }
                logger.error("an edit merged into \(note.id) by \(input.device) was collected before its record: it is not kept as a version (\(error))")
            }
        }
        guard kept != note else { return note }
        let changed = kept
        try await calls.write("cannot keep the merge of \(note.id)") { db in try PendingMerges.set(changed, merged: merged, db) }
        return changed
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
