import ContainerStore
import Foundation
import ItemModel
import MetadataStore

/// Journal compaction, the last step of a collection (format 2, under the lease): the
/// records up to a checkpoint the collector has seen for the compaction horizon are
/// replaced by tombstones, after `history/1-<C>` keeps the versions and trash entries
/// within the retention they carried. A tombstone keeps its key taken, so a device behind
/// can never commit there: its put-if-absent fails, and its pull rejoins from checkpoint C
/// (`joinFromCheckpoint`).
extension SyncEngine {
    func compact(horizon: Duration, report: inout CollectionReport) async throws(SyncError) {
        let (checkpoints, histories) = try await calls.store("cannot list checkpoints and history") { store throws(StoreError) in
            (try await store.listAll(prefix: ContainerLayout.checkpointPrefix), try await store.listAll(prefix: ContainerLayout.historyPrefix))
        }
        let seqs = Set(checkpoints.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.checkpointPrefix) })
        // The end of the compacted history: a history object whose checkpoint is there.
        let compacted = histories.compactMap { ContainerLayout.historyRange(ofKey: $0)?.upperBound }.filter { seqs.contains($0) }.max() ?? 0
        var count = try await finishCompaction(through: compacted)
        let now = Timestamp.now()
        var seen = try await checkpointsSeen()
        for seq in seqs where seq > compacted && seq <= lastSeq && seen[seq] == nil { seen[seq] = now }
        seen = seen.filter { $0.key > compacted && seqs.contains($0.key) }
        // Not past a change held here: its record is not applied, so its version or trash
        // entry is not known here yet.
        let limit = held.values.map { $0.seq - 1 }.min() ?? lastSeq
        let horizonNanos = Int64(horizon.components.seconds) * 1_000_000_000 + horizon.components.attoseconds / 1_000_000_000
        let eligible = seen.filter { $0.key <= min(limit, lastSeq) && $0.value <= now - horizonNanos }.keys.sorted(by: >)
        for target in eligible {
            // Devices behind will join from it: it must be readable.
            guard let checkpoint = try await readCheckpoint(target) else { continue }
            let history = try await writeHistory(through: checkpoint)
            count += try await entomb(from: compacted + 1, through: target)
            for key in histories where (ContainerLayout.historyRange(ofKey: key)?.upperBound ?? 0) < target {
                await tidy("cannot delete \(key)") { store throws(StoreError) in try await store.delete(key) }
            }
            for seq in seqs where seq < target {
                await tidy("cannot delete checkpoint \(seq)") { store throws(StoreError) in try await store.delete(ContainerLayout.checkpointKey(seq)) }
            }
            report.compactedThrough = target
            seen = seen.filter { $0.key > target }
            logger.info("compacted the journal through \(target): \(count) records, their history in \(history)")
            break
        }
        report.recordsCompacted = count
        // A checkpoint at the head, for a later run to compact up to.
        if let written = await writeCheckpointAtHead(newerThan: seqs.max() ?? 0) { seen[written] = now }
        let text = String(decoding: (try? JSONEncoder().encode(seen)) ?? Data(), as: UTF8.self)
        _ = try await calls.write("cannot record the checkpoints seen") { db in try MetadataStore.setSetting(SettingKey.checkpointsSeen, text, db) }
    }

    private func checkpointsSeen() async throws(SyncError) -> [UInt64: Int64] {
        let text = try await calls.read("cannot read the checkpoints seen") { db in try MetadataStore.setting(SettingKey.checkpointsSeen, db) }
        return text.flatMap { try? JSONDecoder().decode([UInt64: Int64].self, from: Data($0.utf8)) } ?? [:]
    }

    /// `history/1-<C>`: every version and trash entry this device keeps of records up to
    /// checkpoint C (it knows the whole history: `checkCanCollect`). Returns its key.
    private func writeHistory(through checkpoint: Checkpoint) async throws(SyncError) -> String {
        let target = checkpoint.seq
        let (versions, trash) = try await calls.read("cannot read the history to compact") { db in
            (try FileVersions.all(through: target, db), try TrashEntries.through(target, db))
        }
        let format = format.current
        let key = ContainerLayout.historyKey(first: 1, last: target)
        let bytes: [UInt8]
        do {
            bytes = try await OffloadedWork.run { () throws in
                let items = Dictionary(checkpoint.items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                // Oldest first: the last of an id is its newest.
                let newest = Dictionary(
                    versions.enumerated().filter { $0.element.version.input == 0 }.map { ($0.element.id, $0.offset) }, uniquingKeysWith: { _, later in later })
                let written = versions.enumerated().map { index, entry in
                    let current = newest[entry.id] == index && items[entry.id].map { $0.kind == .file && ($0.blocks ?? []).sameContent(as: entry.version.blocks) } == true
                    return HistoryObject.Version(id: entry.id, entry.version, inCheckpoint: current)
                }
                return try RecordCodec.encode(HistoryObject(format: format, first: 1, last: target, versions: written, trash: trash))
            }
        } catch {
            throw SyncError(code: .store, message: "cannot encode \(key)", cause: error)
        }
        try await calls.store("cannot write \(key)") { store throws(StoreError) in try await store.put(key, bytes) }
        return key
    }

    /// Replaces records `first...last` by tombstones, oldest first, so what is left is
    /// always a run of records a reader can follow. Returns how many.
    private func entomb(from first: UInt64, through last: UInt64) async throws(SyncError) -> Int {
        guard first <= last else { return 0 }
        let tombstone = JournalRecord.tombstone(format: format.current, device: device.id, deviceName: device.name, through: last, time: Timestamp.now())
        let bytes: [UInt8]
        do { bytes = try RecordCodec.encode(tombstone) } catch { throw SyncError(code: .store, message: "cannot encode a tombstone", cause: error) }
        for seq in first...last {
            let key = ContainerLayout.journalKey(seq)
            try await calls.store("cannot compact \(key)") { store throws(StoreError) in try await store.put(key, bytes) }
        }
        return Int(last - first + 1)
    }

    /// After a run cut short: records up to `last` (the end of the history) may still be
    /// records. From `last` down to the first tombstone (or a record that is gone), then
    /// entombed upwards from there. Returns how many.
    private func finishCompaction(through last: UInt64) async throws(SyncError) -> Int {
        var first = last + 1
        while first > 1 {
            let key = ContainerLayout.journalKey(first - 1)
            let bytes: [UInt8]
            do {
                bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
            } catch where error.code == .notFound {
                break
            }
            if (try? RecordCodec.decode(JournalRecord.self, from: bytes))?.compacted != nil { break }
            first -= 1
        }
        return try await entomb(from: first, through: last)
    }

    /// Writes `checkpoints/<head>` from the committed tree if the head is past `newest`
    /// and nothing is held here (a held change means the tree is not the journal's).
    /// The head and the tree are read in one transaction, so they agree. Returns the seq.
    func writeCheckpointAtHead(newerThan newest: UInt64) async -> UInt64? {
        do {
            let state = try await metadata.read { db -> (seq: UInt64, items: [ItemSnapshot], settings: ContainerSettings, root: RootAttributes?)? in
                let head = try MetadataStore.setting(SettingKey.lastSeq, db).flatMap { UInt64($0) } ?? 0
                guard head > newest, try HeldChanges.isEmpty(db) else { return nil }
                return (head, try BaseSnapshots.all(db), try ContainerSettings.current(db), try RootState.base(db))
            }
            guard let state else { return nil }
            var checkpoint = Checkpoint(seq: state.seq, items: state.items)
            checkpoint.format = format.current
            checkpoint.settings = state.settings
            checkpoint.root = state.root
            let bytes = try await OffloadedWork.run { [checkpoint] () throws in try RecordCodec.encode(checkpoint) }
            let key = ContainerLayout.checkpointKey(state.seq)
            _ = try await calls.store("cannot write \(key)") { store throws(StoreError) in try await store.putIfAbsent(key, bytes) }
            logger.info("wrote checkpoint \(state.seq) with \(state.items.count) items")
            return state.seq
        } catch {
            logger.error("cannot write a checkpoint at the head: \(error)")
            return nil
        }
    }
}
