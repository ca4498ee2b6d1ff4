import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Pulling: every record after `lastSeq`, in order, each applied in one transaction under
/// exclusive leases on what it touches (`RecordApplier`); a new device, or one whose next
/// record was compacted away, starts from a checkpoint (`joinFromCheckpoint`).
extension SyncEngine {
    /// Applies every new record.
    func pull() async throws(SyncError) {
        if lastSeq == 0 && lastGapCheck == nil { _ = try await joinFromCheckpoint(.start) }
        // Sequence numbers have no gaps (each is taken with put-if-absent), so reading the
        // next key until there is none needs no listing: one request per poll when idle.
        while true {
            let seq = lastSeq + 1
            switch try await readRecord(seq) {
            case .missing:
                // The next record, or records up to a checkpoint, compacted away?
                if try await joinFromCheckpoint(.missing) { continue }
                return
            case .refused:
                try await apply(JournalRecord(device: "", deviceName: "", commit: "", time: 0, ops: []), seq: seq)
            case .stored(let record, let hash):
                if record.compacted != nil {
                    // A tombstone: the state after it is a checkpoint's (none readable throws).
                    guard try await joinFromCheckpoint(.compacted) else {
                        throw SyncError(code: .container, message: "journal record \(seq) was compacted and no checkpoint after it can be joined")
                    }
                    continue
                }
                if let prev = record.prev { try await checkFollows(prev, seq: seq) }
                let applied = try await apply(record, seq: seq, hash: hash)
                try await settleUncertain(applied, seq: seq, hash: hash)
            }
        }
    }

    /// What a journal key holds for the pull.
    private enum NextRecord {
        case missing
        /// Sealed, and changed, cut or moved in the store: skipped, and said.
        case refused
        /// The record (an empty one for a malformed record, skipped and said), and the
        /// SHA-256 of its bytes as stored, which the next record names.
        case stored(JournalRecord, hash: String)
    }

    /// The last record applied here, and how many the store holds after it: a listing of
    /// the journal's keys past it (at most `behindLimit` counted), for the metrics. Throws
    /// when the store does not answer.
    public func journalPosition() async throws(SyncError) -> (applied: UInt64, behind: UInt64) {
        let applied = lastSeq
        let after = ContainerLayout.journalKey(applied)
        let keys = try await calls.store("cannot list the journal") { store throws(StoreError) in
            try await store.list(prefix: ContainerLayout.journalPrefix, startAfter: after, limit: Self.behindLimit)
        }
        let behind = keys.count { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.journalPrefix).map { $0 > applied } ?? false }
        return (applied, UInt64(behind))
    }

    /// How far the lag is counted: beyond, a device is far behind whatever the number.
    static let behindLimit = 1000

    private func readRecord(_ seq: UInt64) async throws(SyncError) -> NextRecord {
        let key = ContainerLayout.journalKey(seq)
        let bytes: [UInt8]
        do {
            bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
        } catch where error.code == .notFound {
            return .missing
        } catch where error.code == .corrupt {
            // Refused like a malformed record, so it cannot stop the container.
            logger.error("journal record \(seq) was refused and skipped: \(error)")
            remember("journal record \(seq) refused: \((error.cause as? StoreError)?.message ?? error.message)", in: &errors)
            return .refused
        }
        var record = JournalRecord(device: "", deviceName: "", commit: "", time: 0, ops: [])
        do {
            let decoded = try RecordCodec.decode(JournalRecord.self, from: bytes)
            try RecordValidator.validate(decoded, formats: configuration.readableFormats)
            record = decoded
        } catch let error where error.code == .unsupportedFormat {
            throw SyncError(code: .container, message: "journal record \(seq): \(error.message)")
        } catch {
            // An unreadable record is skipped (and said), so it cannot stop the container.
            logger.error("journal record \(seq) is malformed and was skipped: \(error)")
            remember("journal record \(seq) skipped: \(error.message)", in: &errors)
        }
        return .stored(record, hash: ContentHasher.sha256Hex(bytes))
    }

    /// Record `seq` names the record before it as this device applied or committed it
    /// (when it knows it): otherwise the store shows devices different histories (two
    /// commits both "won" the same key). Sync stops there; nothing local is lost.
    private func checkFollows(_ prev: String, seq: UInt64) async throws(SyncError) {
        guard let known = try await lastRecordHash(), known != prev else { return }
        let message = "journal record \(seq) does not follow record \(seq - 1) as this device has it: the store shows devices different histories; sync stops here, and nothing local is lost"
        remember(message, in: &errors)
        throw SyncError(code: .container, message: message)
    }

    /// The pull reached the seq of a commit whose outcome was unknown: if the record is
    /// ours, finish that commit now; if another device's, ours did not land (its rows are
    /// still dirty and go in a later commit). `record` as applied (splices expanded).
    func settleUncertain(_ record: JournalRecord, seq: UInt64, hash: String?) async throws(SyncError) {
        guard let pending = uncertain, seq >= pending.seq else { return }
        uncertain = nil
        if seq == pending.seq && record.commit == pending.commit {
            logger.notice("journal \(seq) is this device's commit whose reply was lost; settled, not committed again")
            var plan = try await calls.read("cannot read items for journal \(seq)") { db in
                pending.settlingPlan(for: record) { id in try? ItemRow.find(id: id, db)?.inode }
            }
            if pending.plan == nil { plan.entries = plan.entries.map(keepingLaterWrites) }
            try await committed(plan, seq: seq, record: record, hash: hash)
        } else {
            _ = try await calls.write("cannot clear the uncertain commit") { db in
                try MetadataStore.removeSetting(SettingKey.uncertainCommit, db)
            }
        }
    }

    /// A plan rebuilt after a restart knows no write generation: a file whose cache file is
    /// not the committed version (a write after the upload read it, which its row may not
    /// record) stays changed, to be pushed again.
    private nonisolated func keepingLaterWrites(_ entry: PushPlan.Entry) -> PushPlan.Entry {
        guard case .upsert(let item) = entry.change, item.kind == .file, !entry.nameOnly,
              let status = cache.status(entry.ino), status.size != item.size || status.mtime != item.mtime else { return entry }
        var entry = entry
        entry.changeGen = -1
        return entry
    }

    /// Applies one record under exclusive leases on every item it touches and their
    /// folders, in one transaction; a change to a file open for writing here is held
    /// (`RecordApplier`), the rest applied. Returns the record as applied, its splices
    /// expanded.
    /// `keepsTrash`: false for a checkpoint's catch-up, whose deletes the history object
    /// says; `fromCheckpoint`: its items carry whole lists, a splice there is refused as
    /// any item's; `prelude` runs first in the same transaction (the history of a join).
    @discardableResult
    func apply(
        _ record: JournalRecord, seq: UInt64, hash: String? = nil, keepsTrash: Bool = true, fromCheckpoint: Bool = false,
        prelude: (@Sendable (Database) throws -> Void)? = nil
    ) async throws(SyncError) -> JournalRecord {
        let leases = try await leases(on: record.ops, "sync: apply journal \(seq)")
        let (device, activity, watched, resurrected) = (self.device, self.activity, feed.isWatched, self.resurrected)
        // A read-only mount puts nothing in the store, an edit's content neither.
        let mayMerge = format.current >= 4 && !readOnly
        let outcome: ApplyOutcome
        do {
            outcome = try await metadata.write { db in
                var applier = RecordApplier(
                    db: db, device: device, activity: activity, now: Timestamp.now(), watched: watched, resurrected: resurrected
                )
                applier.merging = mayMerge ? try ContainerSettings.current(db).merging : nil
                applier.keepsTrash = keepsTrash
                applier.expandsSplices = !fromCheckpoint
                applier.recordHash = hash
                try prelude?(db)
                try applier.apply(record, seq: seq)
                return applier.outcome
            }
        } catch {
            leases.release()
            throw SyncError(code: .metadata, message: "cannot apply journal \(seq)", cause: error)
        }
        lastSeq = seq
        await finish(outcome, releasing: leases)
        // Another device upgraded the container in place: this one writes the new format
        // from now on (and from its next start: `formatTwoFrom`, noted with the record).
        if format.raise(to: record.format) {
            logger.notice("journal \(seq) has format \(record.format): the container was upgraded; this device writes it from now on")
        }
        return outcome.applied ?? record
    }

    /// Exclusive leases on every item the operations touch and on their folders, old and new.
    func leases(on operations: [JournalOperation], _ owner: String) async throws(SyncError) -> LeaseSet {
        let inos: [Inode] = try await calls.read("cannot read items for \(owner)") { db in
            var inos: Set<Inode> = []
            for operation in operations {
                if case .upsert(let item) = operation {
                    if item.parent == .root {
                        inos.insert(Inode.root)
                    } else if let parent = try ItemRow.find(id: item.parent, db) {
                        inos.insert(parent.inode)
                    }
                }
                guard let row = try ItemRow.find(id: operation.itemID, db) else { continue }
                inos.insert(row.inode)
                if let parent = row.parent { inos.insert(parent) }
            }
            return inos.sorted()
        }
        do {
            return try await coordinator.acquire(inos.map { LeaseRequest($0, .exclusive) }, owner: owner)
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled while waiting to \(owner)", cause: error)
        }
    }

    /// What follows an applied record or held change, in the lock order: replaced content
    /// dropped under the leases, the leases released, then kernel invalidations, events,
    /// conflicts, and the prefetch of pinned placeholders.
    /// Content is dropped only once the rows that no longer name it are on disk: a power
    /// cut must not leave a row naming old content over the next download of new content.
    func finish(_ outcome: ApplyOutcome, releasing leases: LeaseSet) async {
        resurrected = outcome.resurrected
        for (ino, mtime) in outcome.mtimes { cache.setModificationTime(ino, nanoseconds: mtime) }
        var durable = true
        if !outcome.droppedContent.isEmpty {
            do { try await metadata.syncToDisk() } catch {
                // The stale files stay (a placeholder's row ignores them) until a fill replaces them.
                logger.error("cannot make the state database durable; replaced content is kept on disk for now: \(error)")
                durable = false
            }
        }
        for ino in outcome.droppedContent {
            if durable { cache.remove(ino) }
            downloads.partials.forget(ino)
            activity.contentDiscarded(ino)
        }
        leases.release()
        invalidations.invalidate(outcome.invalidations)
        feed.emit(outcome.events)
        metrics.conflicts.add(UInt64(outcome.conflicts.count))
        metrics.merges.add(UInt64(outcome.merges.count))
        for conflict in outcome.conflicts {
            logger.warning("conflict: \(conflict)")
            remember(conflict, in: &conflicts)
            conflictListener.report(.conflict, conflict)
        }
        for merge in outcome.merges {
            remember(merge, in: &merges)
            conflictListener.report(.merged, merge)
        }
        for refusal in outcome.refused {
            logger.error("refused from the store: \(refusal)")
            remember(refusal, in: &errors)
        }
        if !outcome.changedItems.isEmpty { thumbnailEvents.report(.changed(outcome.changedItems)) }
        for id in outcome.released { held[id] = nil }
        held.merge(outcome.held) { _, newer in newer }
        // A new retention is applied at the next prune, not ten minutes later.
        if outcome.settingsChanged { lastPrune = nil }
        await purgeDeleted()
        if !outcome.placeholders.isEmpty {
            let candidates = outcome.placeholders
            let pinned = (try? await metadata.read { db in try ItemRow.pinned(among: candidates, db) }) ?? []
            downloads.prefetch(pinned)
        }
    }

    // MARK: Held changes

    /// Applies the held changes that nothing holds any more (their writer closed or wrote,
    /// or a restart freed them), each in a transaction of its own: upserts before deletes
    /// (a move out of a folder before the folder's delete), each oldest first.
    func settleHeld() async throws(SyncError) {
        let activity = self.activity
        let order = held.values.sorted { first, second in
            (first.operation.isDelete ? 1 : 0, first.seq) < (second.operation.isDelete ? 1 : 0, second.seq)
        }
        for change in order {
            let blocked = try await calls.read("cannot read a held change") { db in
                try RecordApplier.stillHeld(change, db, activity)
            }
            if blocked { continue }
            let leases = try await leases(on: [change.operation], "sync: apply held journal \(change.seq)")
            let (device, watched, resurrected) = (self.device, feed.isWatched, self.resurrected)
            let outcome: ApplyOutcome?
            do {
                outcome = try await metadata.write { db -> ApplyOutcome? in
                    // Again under the leases: a program may have opened the file meanwhile (and
                    // a later record replaced the change, if the list is not current).
                    guard try HeldChanges.find(change.itemID, db)?.seq == change.seq,
                          try !RecordApplier.stillHeld(change, db, activity) else { return nil }
                    var applier = RecordApplier(
                        db: db, device: device, activity: activity, now: Timestamp.now(), watched: watched, resurrected: resurrected
                    )
                    try applier.applyHeld(change)
                    return applier.outcome
                }
            } catch {
                leases.release()
                throw SyncError(code: .metadata, message: "cannot apply the held change of journal \(change.seq)", cause: error)
            }
            guard let outcome else {
                leases.release()
                continue
            }
            logger.info("the held change of journal \(change.seq) to \(change.waitingFor) is applied: the file is closed or written here")
            await finish(outcome, releasing: leases)
        }
    }

    /// Drops rows of deleted items that nothing references any more, and their content.
    func purgeDeleted() async {
        guard let candidates = try? await metadata.read({ db in try ItemRow.purgeCandidates(db) }) else { return }
        let unused = candidates.filter { !activity.isReferenced($0) }
        guard !unused.isEmpty else { return }
        do {
            try await metadata.write { db in
                for ino in unused { try ItemRow.purgeIfSettled(ino, db) }
            }
        } catch {
            // The rows and their content stay; the next purge, or the next start, frees them.
            logger.error("cannot purge deleted items: \(error)")
            return
        }
        let mark = metadata.durabilityMark()
        for ino in unused { cache.removeOnceDurable(ino, mark: mark) }
    }
}
