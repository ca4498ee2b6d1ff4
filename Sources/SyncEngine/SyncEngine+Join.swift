import ContainerStore
import Foundation
import ItemModel
import MetadataStore

/// Joining from a checkpoint: a new device, and a device whose next journal record was
/// compacted away (it was offline past the compaction horizon). Both take the checkpoint
/// as the committed state, with the history object of the records before it, and rebase
/// what is pending here on it exactly as on a pull: nothing local is lost, and the device
/// never stops at a gap (docs/CONTAINER-FORMAT.md, "Compaction").
extension SyncEngine {
    /// Joins from a checkpoint after `lastSeq` if there is one to join from, looking at
    /// most once per `gapCheckInterval` (one `LIST`; the first pull always looks).
    /// `afterGap`: record `lastSeq + 1` is not in the store, so a checkpoint after it
    /// means it was compacted. Otherwise (a new device, before its first record) no
    /// readable checkpoint means replaying the journal from 1. Returns whether it joined.
    func joinFromCheckpoint(afterGap: Bool) async throws(SyncError) -> Bool {
        if let last = lastGapCheck, ContinuousClock.now - last < configuration.gapCheckInterval { return false }
        lastGapCheck = .now
        let checkpoints = try await calls.store("cannot list checkpoints") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.checkpointPrefix)
        }
        let after = checkpoints.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.checkpointPrefix) }.filter { $0 > lastSeq }
        guard !after.isEmpty else { return false }
        let histories = try await calls.store("cannot list history") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.historyPrefix)
        }
        // The end of the compacted history first: joined there, this device knows it all.
        let history = histories.compactMap { key in ContainerLayout.historyRange(ofKey: key).map { (key, $0) } }.max { $0.1.upperBound < $1.1.upperBound }
        var candidates = after.sorted(by: >)
        if let end = history?.1.upperBound, let index = candidates.firstIndex(of: end) { candidates.insert(candidates.remove(at: index), at: 0) }
        for seq in candidates {
            guard let checkpoint = try await readCheckpoint(seq) else { continue }
            let past = seq == history?.1.upperBound ? try await readHistory(history!.0) : nil
            try await join(checkpoint, history: past)
            return true
        }
        guard afterGap else { return false }
        throw SyncError(
            code: .container,
            message: "journal record \(lastSeq + 1) is gone (compacted) and no checkpoint after it is readable; nothing here is lost, and sync waits for a readable checkpoint"
        )
    }

    /// The checkpoint `checkpoints/<seq>`, or nil (logged) if it cannot be used.
    private func readCheckpoint(_ seq: UInt64) async throws(SyncError) -> Checkpoint? {
        let key = ContainerLayout.checkpointKey(seq)
        let bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
        let formats = configuration.readableFormats
        let checkpoint = await OffloadedWork.run { () -> Checkpoint? in
            guard let checkpoint = try? RecordCodec.decode(Checkpoint.self, from: bytes), formats.contains(checkpoint.format),
                  checkpoint.seq == seq, seq < UInt64(Int64.max) else { return nil }
            return checkpoint
        }
        if checkpoint == nil {
            logger.error("checkpoint \(key) is unreadable; trying an older one")
            remember("checkpoint \(key) is unreadable", in: &errors)
        }
        return checkpoint
    }

    private func readHistory(_ key: String) async throws(SyncError) -> HistoryObject? {
        let bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
        let formats = configuration.readableFormats
        let (history, refused) = await OffloadedWork.run { () -> (HistoryObject?, [String]) in
            var refused: [String] = []
            return (HistoryObject.decode(bytes, key: key, formats: formats, refused: &refused), refused)
        }
        for refusal in refused {
            logger.error("refused from the store: \(refusal)")
            remember(refusal, in: &errors)
        }
        return history
    }

    /// Takes `checkpoint` as the committed state: the history after this device's position
    /// first (so the catch-up's upserts find their versions known), then the catch-up as
    /// one record: what changed since this device's base, and the deletes of what is gone.
    private func join(_ checkpoint: Checkpoint, history: HistoryObject?) async throws(SyncError) {
        let (from, seq) = (lastSeq, checkpoint.seq)
        let base = try await calls.read("cannot read the committed tree") { db in try BaseSnapshots.all(db) }
        let operations = await OffloadedWork.run { Self.catchUp(from: base, to: checkpoint) }
        logger.notice(from == 0
            ? "joining from checkpoint \(seq) (\(checkpoint.items.count) items)"
            : "journal records after \(from) were compacted: rejoining from checkpoint \(seq), \(operations.count) changes to rebase on")
        _ = try await calls.write("cannot record the history before checkpoint \(seq)") { db in
            for version in history?.versions ?? [] where version.seq > from { try FileVersions.add(version.id, version.version, db) }
            for entry in history?.trash ?? [] where entry.seq > from { try TrashEntries.add(entry, db) }
            // With the history object, this device knows what it would have known by replaying.
            if history == nil {
                try MetadataStore.removeSetting(SettingKey.wholeHistory, db)
                try MetadataStore.setSetting(SettingKey.historyFrom, String(seq), db)
            } else if from == 0 {
                try MetadataStore.setSetting(SettingKey.wholeHistory, "1", db)
            }
        }
        // A commit of ours whose reply was lost, at or before the checkpoint: its rows are
        // still pending and go again (the same ids and content: the same result if it landed).
        if let pending = uncertain, pending.seq <= seq {
            uncertain = nil
            _ = try await calls.write("cannot clear the uncertain commit") { db in try MetadataStore.removeSetting(SettingKey.uncertainCommit, db) }
        }
        var record = JournalRecord(device: "checkpoint", deviceName: "checkpoint", commit: ContainerLayout.checkpointKey(seq), time: 0, ops: operations)
        record.settings = checkpoint.settings
        record.format = checkpoint.format
        try await apply(record, seq: seq, keepsTrash: history == nil && from > 0)
    }

    /// The operations that take a committed tree `base` to `checkpoint`: upserts of what
    /// differs, each folder before what is in it (items the root does not reach are not
    /// part of the tree), then deletes of what the checkpoint no longer has (a folder's
    /// delete takes what is inside it).
    static func catchUp(from base: [ItemSnapshot], to checkpoint: Checkpoint) -> [JournalOperation] {
        let children = Dictionary(grouping: checkpoint.items, by: \.parent)
        var ordered: [ItemSnapshot] = []
        var queue: [ItemID] = [.root]
        var reached: Set<ItemID> = [.root]
        while let next = queue.popLast() {
            for child in children[next] ?? [] where reached.insert(child.id).inserted {
                ordered.append(child)
                queue.append(child.id)
            }
        }
        let known = Dictionary(base.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let gone = Set(base.map(\.id).filter { $0 != .root && !reached.contains($0) })
        let upserts = ordered.filter { known[$0.id] != $0 }.map { JournalOperation.upsert($0) }
        let deletes = base.filter { gone.contains($0.id) && !gone.contains($0.parent) }.map { JournalOperation.delete($0.id) }
        return upserts + deletes
    }
}
