import ContainerStore
import Foundation
import GRDB
import ItemModel
import MetadataStore

/// Joining from a checkpoint: a new device, and a device whose next journal record was
/// compacted (a tombstone is there; or, as a second line, the record is gone). Both take
/// the checkpoint as the committed state, with the history object of the records before
/// it, and rebase what is pending here on it exactly as on a pull: nothing local is lost,
/// and the device never stops at a gap (docs/CONTAINER-FORMAT.md, "Compaction").
extension SyncEngine {
    /// Why a pull looks for a checkpoint to join from.
    enum JoinReason {
        /// A new device, before its first record: no readable checkpoint (in format 2, none
        /// with its history) means replaying.
        case start
        /// `journal/<lastSeq + 1>` is not in the store: looked at most once per
        /// `gapCheckInterval`; a checkpoint after `lastSeq` means it was compacted away.
        case missing
        /// `journal/<lastSeq + 1>` is a tombstone.
        case compacted
    }

    /// Joins from a checkpoint after `lastSeq` if there is one; returns whether it joined.
    /// A look that fails counts as one (the tombstones, not this look, keep a device from
    /// writing into a compacted gap); after a join the next missing record is looked into
    /// at once, since the position jumped.
    func joinFromCheckpoint(_ reason: JoinReason) async throws(SyncError) -> Bool {
        if reason == .missing, let last = lastGapCheck, ContinuousClock.now - last < configuration.gapCheckInterval { return false }
        lastGapCheck = .now
        let checkpoints = try await calls.store("cannot list checkpoints") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.checkpointPrefix)
        }.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.checkpointPrefix) }
        let after = checkpoints.filter { $0 > lastSeq }
        if after.isEmpty && reason != .compacted { return false }
        if reason == .missing {
            // A record committed since the pull's get (with a checkpoint) is no gap.
            let next = ContainerLayout.journalKey(lastSeq + 1)
            if try await calls.store("cannot read \(next)", { store throws(StoreError) in try await store.exists(next) }) { return false }
        }
        if let history = try await newestHistory(endingAt: Set(checkpoints)), history.last > lastSeq {
            if let checkpoint = try await readCheckpoint(history.last) {
                try await join(checkpoint, history: try await readHistory(history.key))
                lastGapCheck = nil
                return true
            }
        }
        // In format 2 a new device replays the journal rather than start from a checkpoint
        // without its history (it would not list what came before; the first record, if
        // compacted, is a tombstone that brings it back here for that).
        // If its first record is simply missing, the pull's look into that comes at once.
        if reason == .start && format.current >= 2 {
            lastGapCheck = nil
            return false
        }
        for seq in after.sorted(by: >) {
            guard let checkpoint = try await readCheckpoint(seq) else { continue }
            try await join(checkpoint, history: nil)
            lastGapCheck = nil
            return true
        }
        if reason == .start { return false }
        throw SyncError(
            code: .container,
            message: "journal record \(lastSeq + 1) was compacted and no checkpoint after it is readable; nothing here is lost, and sync waits for a readable checkpoint"
        )
    }

    /// The newest history object whose end checkpoint exists (one left by a compaction cut
    /// short, or ending where nothing can be joined, is not the history of any checkpoint).
    private func newestHistory(endingAt checkpoints: Set<UInt64>) async throws(SyncError) -> (key: String, last: UInt64)? {
        let keys = try await calls.store("cannot list history") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.historyPrefix)
        }
        return keys.compactMap { key in ContainerLayout.historyRange(ofKey: key).map { (key, $0.upperBound) } }
            .filter { checkpoints.contains($0.1) }.max { $0.1 < $1.1 }
    }

    /// The checkpoint `checkpoints/<seq>`, or nil (logged) if it is gone or cannot be used.
    func readCheckpoint(_ seq: UInt64) async throws(SyncError) -> Checkpoint? {
        let key = ContainerLayout.checkpointKey(seq)
        let bytes: [UInt8]
        do {
            bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
        } catch where error.code == .notFound {
            return nil
        } catch where error.code == .corrupt {
            // Sealed and changed in the store: refused like an undecodable one.
            bytes = []
        }
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
        let bytes: [UInt8]
        do {
            bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
        } catch where error.code == .corrupt {
            // Sealed and changed in the store: the history is not listed, the rest goes on.
            bytes = []
        }
        let formats = configuration.readableFormats
        let (history, refused) = await OffloadedWork.run { () -> (HistoryObject?, [String]) in
            var refused: [String] = []
            return (HistoryObject.decode(bytes, key: key, formats: formats, refused: &refused), refused)
        }
        for refusal in refused.prefix(20) {
            logger.error("refused from the store: \(refusal)")
            remember(refusal, in: &errors)
        }
        if refused.count > 20 { logger.error("refused from the store: \(refused.count - 20) more in \(key)") }
        return history
    }

    /// Takes `checkpoint` as the committed state: a commit of ours whose reply was lost is
    /// settled first, then, in one transaction, the history after this device's position
    /// (so the catch-up's upserts find their versions known) and the catch-up as one
    /// record: what changed since this device's base, and the deletes of what is gone.
    private func join(_ checkpoint: Checkpoint, history: HistoryObject?) async throws(SyncError) {
        try await settleUncertain(before: checkpoint)
        let (from, seq, held) = (lastSeq, checkpoint.seq, Set(self.held.keys))
        let base = try await calls.read("cannot read the committed tree") { db in try BaseSnapshots.all(db) }
        let operations = await OffloadedWork.run { Self.catchUp(from: base, to: checkpoint, held: held) }
        logger.notice(from == 0
            ? "joining from checkpoint \(seq) (\(checkpoint.items.count) items)"
            : "journal records after \(from) were compacted: rejoining from checkpoint \(seq), \(operations.count) changes to rebase on")
        let items = Dictionary(checkpoint.items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var record = JournalRecord(device: "checkpoint", deviceName: "checkpoint", commit: ContainerLayout.checkpointKey(seq), time: 0, ops: operations)
        record.settings = checkpoint.settings
        record.root = checkpoint.root
        record.format = checkpoint.format
        try await apply(record, seq: seq, keepsTrash: history == nil && from > 0, fromCheckpoint: true) { db in
            for version in history?.versions ?? [] where version.seq > from {
                if let known = version.version(in: items) { try FileVersions.add(version.id, known, db) }
            }
            for entry in history?.trash ?? [] where entry.seq > from { try TrashEntries.add(entry, db) }
            // With the history object, this device knows what it would have known by replaying.
            if history == nil {
                try MetadataStore.removeSetting(SettingKey.wholeHistory, db)
                try MetadataStore.setSetting(SettingKey.historyFrom, String(seq), db)
            } else if from == 0 {
                try MetadataStore.setSetting(SettingKey.wholeHistory, "1", db)
            }
        }
    }

    /// A commit of ours whose reply was lost, at or before the checkpoint: if the
    /// checkpoint has exactly what it committed, it landed and is settled as ours (no
    /// conflict copies of our own change); otherwise, or when this process no longer knows
    /// what it committed (a restart), its rows are still pending and go again.
    private func settleUncertain(before checkpoint: Checkpoint) async throws(SyncError) {
        guard let pending = uncertain, pending.seq <= checkpoint.seq else { return }
        uncertain = nil
        let items = Dictionary(checkpoint.items.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        guard let plan = pending.plan, pending.seq > lastSeq, plan.operations.allSatisfy({ operation in
            switch operation {
            case .upsert(let item): (try? RecordValidator.sanitized(item)) == items[item.id]
            case .delete(let id): items[id] == nil
            }
        }) else {
            _ = try await calls.write("cannot clear the uncertain commit") { db in try MetadataStore.removeSetting(SettingKey.uncertainCommit, db) }
            return
        }
        logger.notice("journal \(pending.seq) is this device's commit whose reply was lost, compacted since; settled")
        var record = JournalRecord(device: device.id, deviceName: device.name, commit: pending.commit, time: pending.time, ops: plan.operations)
        record.format = format.current
        try await committed(plan, seq: pending.seq, record: record, hash: nil)
    }

    /// The operations that take a committed tree `base` to `checkpoint`: upserts of what
    /// differs, each folder before what is in it (items the root does not reach are not
    /// part of the tree), then deletes of everything the checkpoint no longer has, deepest
    /// first. An item with a change held here always gets its operation, which replaces
    /// the held one (held from a record the checkpoint has superseded).
    static func catchUp(from base: [ItemSnapshot], to checkpoint: Checkpoint, held: Set<ItemID> = []) -> [JournalOperation] {
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
        // Links after every other item: each names an item placed before it.
        ordered = ordered.filter { $0.kind != .link } + ordered.filter { $0.kind == .link }
        let known = Dictionary(base.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let upserts = ordered.filter { known[$0.id] != $0 || held.contains($0.id) }.map { JournalOperation.upsert($0) }
        let gone = Set(base.map(\.id)).union(held).subtracting(reached)
        var depths: [ItemID: Int] = [:]
        func depth(_ id: ItemID) -> Int {
            if let known = depths[id] { return known }
            var (steps, next, seen) = (0, known[id]?.parent, Set([id]))
            while let parent = next, parent != .root, seen.insert(parent).inserted {
                steps += 1
                next = known[parent]?.parent
            }
            depths[id] = steps
            return steps
        }
        let deletes = gone.sorted { (depth($0), $0) > (depth($1), $1) }.map { JournalOperation.delete($0) }
        return upserts + deletes
    }
}
