import ContainerStore
import Foundation
import ItemModel
import MetadataStore

/// Journal compaction, the last step of a collection (format 2, under the lease): records
/// up to a checkpoint the collector has seen for the compaction horizon are deleted, after
/// `history/1-<C>` keeps the versions and trash entries within the retention they carried.
/// Devices whose next record is gone rejoin from checkpoint C (`joinFromCheckpoint`).
extension SyncEngine {
    func compact(horizon: Duration, report: inout CollectionReport) async throws(SyncError) {
        var deleted = 0
        let (checkpoints, histories) = try await calls.store("cannot list checkpoints and history") { store throws(StoreError) in
            (try await store.listAll(prefix: ContainerLayout.checkpointPrefix), try await store.listAll(prefix: ContainerLayout.historyPrefix))
        }
        let seqs = checkpoints.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.checkpointPrefix) }
        let compacted = histories.compactMap { ContainerLayout.historyRange(ofKey: $0)?.upperBound }.max() ?? 0
        // A compaction cut short leaves records up to its end: finished first.
        deleted += try await finishDeleting(through: compacted)
        let now = Timestamp.now()
        var seen = try await checkpointsSeen()
        for seq in seqs where seq > compacted && seq <= lastSeq && seen[seq] == nil { seen[seq] = now }
        seen = seen.filter { $0.key > compacted && seqs.contains($0.key) }
        let horizonNanos = Int64(horizon.components.seconds) * 1_000_000_000 + horizon.components.attoseconds / 1_000_000_000
        if let target = seen.filter({ $0.key <= lastSeq && $0.value <= now - horizonNanos }).keys.max() {
            let history = try await writeHistory(through: target)
            deleted += try await deleteRecords(from: compacted + 1, through: target)
            for key in histories where key != history {
                await tidy("cannot delete \(key)") { store throws(StoreError) in try await store.delete(key) }
            }
            for seq in seqs where seq < target {
                await tidy("cannot delete checkpoint \(seq)") { store throws(StoreError) in try await store.delete(ContainerLayout.checkpointKey(seq)) }
            }
            report.compactedThrough = target
            seen = seen.filter { $0.key > target }
            logger.info("compacted the journal through \(target): \(deleted) records deleted, their history in \(history)")
        }
        report.recordsDeleted = deleted
        // A checkpoint at the head, for a later run to compact up to.
        if let written = await writeCheckpointAtHead(newerThan: seqs.max() ?? 0) { seen[written] = now }
        let text = String(decoding: (try? JSONEncoder().encode(seen)) ?? Data(), as: UTF8.self)
        _ = try await calls.write("cannot record the checkpoints seen") { db in try MetadataStore.setSetting(SettingKey.checkpointsSeen, text, db) }
    }

    private func checkpointsSeen() async throws(SyncError) -> [UInt64: Int64] {
        let text = try await calls.read("cannot read the checkpoints seen") { db in try MetadataStore.setting(SettingKey.checkpointsSeen, db) }
        return text.flatMap { try? JSONDecoder().decode([UInt64: Int64].self, from: Data($0.utf8)) } ?? [:]
    }

    /// `history/1-<target>`: every version and trash entry this device keeps of records up
    /// to `target` (it knows the whole history: `checkCanCollect`). Returns its key.
    private func writeHistory(through target: UInt64) async throws(SyncError) -> String {
        let (versions, trash) = try await calls.read("cannot read the history to compact") { db in
            (try FileVersions.all(through: target, db), try TrashEntries.through(target, db))
        }
        let history = HistoryObject(
            format: format.current, first: 1, last: target, versions: versions.map { HistoryObject.Version(id: $0.id, $0.version) }, trash: trash
        )
        let bytes: [UInt8]
        do {
            bytes = try await OffloadedWork.run { () throws in try RecordCodec.encode(history) }
        } catch {
            throw SyncError(code: .store, message: "cannot encode \(history.key)", cause: error)
        }
        try await calls.store("cannot write \(history.key)") { store throws(StoreError) in try await store.put(history.key, bytes) }
        return history.key
    }

    /// Deletes journal records `from...through`, oldest first, so what is left is always a
    /// run a reader can follow. Returns how many.
    private func deleteRecords(from first: UInt64, through last: UInt64) async throws(SyncError) -> Int {
        guard first <= last else { return 0 }
        for seq in first...last {
            let key = ContainerLayout.journalKey(seq)
            try await calls.store("cannot delete \(key)") { store throws(StoreError) in try await store.delete(key) }
        }
        return Int(last - first + 1)
    }

    /// After a run killed while deleting: the records still there up to `last` (a run
    /// ending at it), deleted from `last` down until one is already gone.
    private func finishDeleting(through last: UInt64) async throws(SyncError) -> Int {
        var seq = last
        var deleted = 0
        while seq > 0 {
            let key = ContainerLayout.journalKey(seq)
            guard try await calls.store("cannot read \(key)", { store throws(StoreError) in try await store.exists(key) }) else { break }
            try await calls.store("cannot delete \(key)") { store throws(StoreError) in try await store.delete(key) }
            deleted += 1
            seq -= 1
        }
        return deleted
    }

    /// Writes `checkpoints/<head>` from the committed tree if the head is past `newest`
    /// and nothing is held here (a held change means the tree is not the journal's).
    /// The head and the tree are read in one transaction, so they agree. Returns the seq.
    func writeCheckpointAtHead(newerThan newest: UInt64) async -> UInt64? {
        do {
            let state = try await metadata.read { db -> (seq: UInt64, items: [ItemSnapshot], settings: ContainerSettings)? in
                let head = try MetadataStore.setting(SettingKey.lastSeq, db).flatMap { UInt64($0) } ?? 0
                guard head > newest, try HeldChanges.isEmpty(db) else { return nil }
                return (head, try BaseSnapshots.all(db), try ContainerSettings.current(db))
            }
            guard let state else { return nil }
            var checkpoint = Checkpoint(seq: state.seq, items: state.items)
            checkpoint.format = format.current
            checkpoint.settings = state.settings
            let bytes = try await OffloadedWork.run { [checkpoint] () throws in try RecordCodec.encode(checkpoint) }
            _ = try await store.putIfAbsent(ContainerLayout.checkpointKey(state.seq), bytes)
            logger.info("wrote checkpoint \(state.seq) with \(state.items.count) items")
            return state.seq
        } catch {
            logger.error("cannot write a checkpoint at the head: \(error)")
            return nil
        }
    }
}
