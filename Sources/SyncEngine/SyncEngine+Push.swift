import ContainerStore
import ContentCache
import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Pushing: the next part of the commit order (`PushPlan`), its content uploaded
/// (`ContentUploader`), committed as the next journal record with put-if-absent; a lost
/// race is settled by the next pull (the rebase).
extension SyncEngine {
    /// `retry`: nothing was committed, but content was marked to go again (under fresh
    /// keys, as a collector condemned its objects): the next round takes it.
    enum PushResult { case idle, committed, raced, retry }

    func push() async throws(SyncError) -> PushResult {
        // Order first, then upload only what this record takes: uploading every pending
        // file before each record made a large import quadratic (each record re-read and
        // re-hashed the whole backlog).
        let (settings, root) = try await calls.read("cannot read the container's settings") { db in
            (try ContainerSettings.toCommit(db), try RootState.pending(db))
        }
        let (chosen, settled) = try await choosePush()
        let pictures = try await picturesToCommit()
        guard !chosen.isEmpty || !settled.isEmpty || settings != nil || root != nil || !pictures.isEmpty else { return .idle }
        let files = chosen.filter { row in
            row.itemKind == .file && row.dirtyFlags.contains(.content) && !row.deleted && !isBeingWritten(row)
        }
        let uploaded = try await uploader.upload(files)
        let checked = try await withoutObjectsAtRisk(calls.read("cannot plan the push") { db in
            var plan = try PushPlan.make(chosen: chosen, settled: settled, uploads: uploaded, pictures: pictures, db)
            try plan.addPictures(pictures, db)
            return plan
        })
        var plan = checked.plan
        if !plan.settled.isEmpty {
            let settled = plan.settled
            _ = try await calls.write("cannot settle local changes") { db in
                for ino in settled {
                    try ItemRow.settleUncommittedDelete(ino, db)
                }
            }
            await purgeDeleted()
        }
        guard !plan.entries.isEmpty || settings != nil || root != nil else { return checked.reuploading ? .retry : .idle }
        plan.rootChangeGen = root?.changeGen
        let seq = lastSeq + 1
        var record = JournalRecord(
            device: device.id, deviceName: device.name, commit: ItemID.random().rawValue, time: Timestamp.now(),
            ops: plan.operations
        )
        record.format = format.current
        record.settings = settings
        record.root = root?.attributes
        record.batch = pushOrder?.batch
        if record.format >= 2 { record.prev = try await lastRecordHash() }
        if record.format >= 4 { record.merges = try await mergesToCommit(plan) }
        let ops = record.ops
        let bases = record.format >= 5 ? try await calls.read("cannot read the files' lists") { db in try RecordSplices.bases(of: ops, db) } : [:]
        let bytes = try fitting(&plan, into: &record, bases: bases, seq: seq)
        let key = ContainerLayout.journalKey(seq)
        // Until the store answers, nobody knows whether this lands: remember it durably
        // (with every change before it), so that after a power cut the record is known as
        // this device's own and settled, never applied as another's.
        let pending = UncertainCommit(seq: seq, record: record, plan: plan)
        let pendingJSON = String(decoding: try Self.encodeUncertain(pending), as: UTF8.self)
        _ = try await calls.write("cannot record commit \(seq) as pending") { db in
            try MetadataStore.setSetting(SettingKey.uncertainCommit, pendingJSON, db)
        }
        try await calls.syncToDisk("cannot make commit \(seq) durable as pending")
        // Rule W (W1): the put follows a listing of what collectors condemned by at most a
        // quarter of the grace, and that listing brought nothing new since the plan was
        // checked; else the next round plans again. (A record never put is no commit: the
        // pull clears its pending mark.)
        if record.format >= 2, try await !condemned.stillClear(since: checked.generation, calls) { return .retry }
        uncertain = pending
        let won = try await calls.store("cannot commit \(key)") { store throws(StoreError) in try await store.putIfAbsent(key, bytes) }
        // "Already there" may be a retry of our own write that landed: the pull decides.
        guard won else {
            logger.debug("journal \(seq) was taken by another device; rebasing")
            return .raced
        }
        try await committed(plan, seq: seq, record: record, hash: ContentHasher.sha256Hex(bytes))
        // Our own record: the rest of the order still holds.
        if pushOrder?.seq == seq - 1 { pushOrder?.seq = seq }
        logger.info("committed journal \(seq) with \(plan.entries.count) changes")
        // A device holding a change has not applied the whole journal: its tree is no checkpoint.
        if seq % configuration.checkpointInterval == 0 && held.isEmpty {
            _ = await writeCheckpointAtHead(newerThan: seq - 1)
        }
        return .committed
    }

    /// The record's bytes, within what every reader takes (`JournalRecord.maxOperations`
    /// and `RecordCodec.maxRecordSize`): a plan too large (long rename chains, files of
    /// huge block lists) keeps its first part and the rest stays dirty for a new order, so
    /// parents still go first.
    /// Files whose list keeps blocks of the one the journal gave them (`bases`) go as
    /// splices (`RecordSplices`); `record` itself keeps whole lists.
    func fitting(
        _ plan: inout PushPlan, into record: inout JournalRecord, bases: [ItemID: [BlockReference]] = [:], seq: UInt64
    ) throws(SyncError) -> [UInt8] {
        if plan.entries.count > JournalRecord.maxOperations { cut(&plan, to: JournalRecord.maxOperations, &record) }
        while true {
            let bytes: [UInt8]
            do { bytes = try RecordCodec.encode(RecordSplices.spliced(record, bases: bases)) } catch {
                throw SyncError(code: .store, message: "cannot encode journal \(seq)", cause: error)
            }
            let limit = min(configuration.maxRecordBytes, RecordCodec.maxRecordSize)
            if bytes.count <= limit { return bytes }
            guard plan.entries.count > 1 else {
                throw SyncError(code: .store, message: "journal \(seq): one change is \(bytes.count) bytes, more than a record may hold (\(limit))")
            }
            cut(&plan, to: plan.entries.count / 2, &record)
        }
    }

    private func cut(_ plan: inout PushPlan, to count: Int, _ record: inout JournalRecord) {
        logger.info("a record of \(plan.entries.count) changes is cut to \(count); the rest goes next")
        plan.entries = Array(plan.entries.prefix(count))
        record.ops = plan.operations
        let carried = Set(plan.entries.map(\.itemID))
        record.merges = record.merges?.filter { carried.contains($0.id) }
        if record.merges?.isEmpty == true { record.merges = nil }
        pushOrder = nil
    }

    /// The rows the next record takes and the rows that need no operation: the next part
    /// of the order (`nextInOrder`), with what a device applying them needs in the same
    /// record (`PushPlan.withDependencies`).
    func choosePush() async throws(SyncError) -> (chosen: [ItemRow], settled: [Inode]) {
        let (chosen, settled) = try await nextInOrder()
        guard !chosen.isEmpty else { return ([], settled) }
        let held = heldScope()
        let record = try await calls.read("cannot plan the push") { db in
            let record = try PushPlan.withDependencies(chosen, db)
            // A dependency may be held back too: it goes with a later record, and so does
            // what needs it.
            return (ordered: try held.split(record.ordered, db).pushable, settled: record.settled)
        }
        return (record.ordered, settled + record.settled)
    }

    /// At most `maxOperationsPerRecord` rows, and the rows that need no operation: the next
    /// part of this cycle's order if it still holds, else a new order of every dirty row.
    /// Rows `isHeldBack` are left out (a half-written file is never published).
    func nextInOrder() async throws(SyncError) -> (chosen: [ItemRow], settled: [Inode]) {
        let limit = configuration.maxOperationsPerRecord
        let held = heldScope()
        let localChanges = signals.withLock { $0.pushes.changes }
        if let order = pushOrder, order.localChanges == localChanges, order.seq == lastSeq, !order.inodes.isEmpty {
            let (chosen, rest) = try await calls.read("cannot read pending changes") { db in
                var chosen: [ItemRow] = []
                var rest = order.inodes
                while chosen.count < limit, let ino = rest.popFirst() {
                    // Gone or clean since: a commit of ours took it (or settled it).
                    guard let row = try ItemRow.find(ino: ino, db), !row.dirtyFlags.isEmpty, try !self.isHeldBack(row, held, db) else { continue }
                    chosen.append(row)
                }
                return (chosen, rest)
            }
            pushOrder?.inodes = rest
            if !chosen.isEmpty { return (chosen, []) }
        }
        pushOrder = nil
        fullPushPlans += 1
        let candidates = try await calls.read("cannot read pending changes") { db in
            try held.split(ItemRow.dirtyRows(db), db).pushable.filter { row in !self.isBeingWritten(row) }
        }
        guard !candidates.isEmpty else { return ([], []) }
        let (ordered, settled) = try await calls.read("cannot plan the push") { db in
            try PushPlan.order(rows: candidates, db)
        }
        if ordered.count > limit {
            pushOrder = PushOrder(inodes: ordered.dropFirst(limit).map(\.inode)[...], localChanges: localChanges, seq: lastSeq)
        }
        return (Array(ordered.prefix(limit)), settled)
    }

    /// Not pushed yet: a file open for writing and written since its last fsync, or what a
    /// change held for a writer here keeps back (`HeldScope`).
    nonisolated func isHeldBack(_ row: ItemRow, _ held: HeldScope, _ db: Database) throws -> Bool {
        try isBeingWritten(row) || held.contains(row, db)
    }

    /// What the held changes keep from the push.
    func heldScope() -> HeldScope {
        HeldScope(held.values.map(\.operation))
    }

    /// The local changes that wait for a held change to land (`HeldScope`).
    public func heldBack() async throws(SyncError) -> [ItemID] {
        let held = heldScope()
        return try await calls.read("cannot read pending changes") { db in
            try held.split(ItemRow.dirtyRows(db), db).heldBack.map(\.itemID)
        }
    }

    nonisolated func isBeingWritten(_ row: ItemRow) -> Bool {
        row.itemKind == .file && row.dirtyFlags.contains(.content) && !row.deleted && activity.isBeingWritten(row.inode)
    }

    static func encodeUncertain(_ pending: UncertainCommit) throws(SyncError) -> Data {
        do { return try JSONEncoder().encode(pending) } catch {
            throw SyncError(code: .metadata, message: "cannot encode a pending commit", cause: error)
        }
    }

    /// The hash of the last record applied or committed here (nil: not known).
    func lastRecordHash() async throws(SyncError) -> String? {
        try await calls.read("cannot read the last record's hash") { db in try MetadataStore.setting(SettingKey.lastRecordHash, db) }
    }

    /// Our record is in the journal: its items' committed base moves to it, and rows
    /// that did not change since they were read become clean. `hash`: of the record's
    /// bytes as stored, which the next record names.
    func committed(_ plan: PushPlan, seq: UInt64, record: JournalRecord, hash: String?) async throws(SyncError) {
        let (time, settings, batch, format) = (record.time, record.settings, record.batch, record.format)
        let activity = self.activity
        let deviceName = device.name
        _ = try await calls.write("cannot record commit \(seq)") { db in
            // The files the record put as splices (against the lists before it), whose
            // lists are one splice further from a whole one.
            let spliced = RecordSplices.splicedIDs(record, bases: try RecordSplices.bases(of: record.ops, db))
            var trash = TrashCollector()
            for entry in plan.entries {
                guard var row = try ItemRow.find(ino: entry.ino, db) else { continue }
                let committedID: ItemID = switch entry.change {
                case .upsert(let item): item.id
                case .delete(let id): id
                }
                // A safe save may have given the row another item's id meanwhile: leave it dirty.
                guard row.itemID == committedID else {
                    // The item just committed is then nobody's: its delete goes next.
                    if case .upsert(let item) = entry.change {
                        if var pending = try ItemRow.find(id: item.id, db) {
                            // Its delete waits already (an item that became ignored): the
                            // trash there will keep this version.
                            if pending.deleted {
                                pending.baseSeq = Int64(seq)
                                try pending.update(db)
                                try BaseSnapshots.set(item, seq: seq, db)
                            }
                        } else {
                            let parent = try ItemRow.find(id: item.parent, db)?.inode ?? row.parent
                            try ItemRow.insertDeleteToPush(of: item, under: parent, baseSeq: Int64(seq), db)
                            try BaseSnapshots.set(item, seq: seq, db)
                        }
                    }
                    continue
                }
                let contentClean = entry.upload.map { activity.commitContent(entry.ino, generation: $0.writeGeneration, blocks: $0.blocks) } ?? !entry.nameOnly
                let unchanged = row.changeGen == entry.changeGen && contentClean
                switch entry.change {
                case .delete(let id):
                    try trash.note(deleting: id, db)
                    try BaseSnapshots.remove(id, db)
                    if row.deleted { row.dirtyFlags = [] }
                case .upsert(let item) where entry.nameOnly:
                    // The content (and so the mtime and size) stays ours, to be pushed.
                    try BaseSnapshots.set(item, seq: seq, db)
                    row.baseSeq = Int64(seq)
                case .upsert(let item):
                    try BaseSnapshots.set(item, seq: seq, db)
                    try FileVersions.record(item, seq: seq, device: deviceName, time: time, db)
                    row.baseSeq = Int64(seq)
                    // Size and mtime too when the content is the committed one: a commit
                    // settled after a lost reply or a crash has no upload of its own.
                    if item.kind == .file {
                        row.blockList = item.blocks ?? []
                        if entry.upload != nil || unchanged { row.size = item.size }
                    }
                    if entry.upload != nil || unchanged { row.mtime = item.mtime }
                    // Not the ctime: an upload changes nothing a program can see in stat, and
                    // tar and rsync fail ("file changed as we read it") on a ctime that moves.
                    if unchanged {
                        row.dirtyFlags = []
                    } else if entry.upload != nil && contentClean {
                        // Only metadata changed since the read: the content is committed.
                        row.dirtyFlags.remove(.content)
                    }
                }
                try row.update(db)
                // What still waits was changed after the plan was read: not as old as before.
                if !row.dirtyFlags.isEmpty { try PendingSince.restart(row.inode, at: time, db) }
            }
            // Only what the record carries: a record cut to fit leaves the rest waiting.
            let carried = Set(plan.entries.map(\.itemID))
            for id in plan.pictured where carried.contains(id) { try MadeThumbnails.remove(id, db) }
            try RecordSplices.note(record.ops, spliced: spliced, db)
            try Self.committedMerges(record, plan, seq: seq, device: deviceName, db)
            try trash.record(seq: seq, device: deviceName, time: time, batch: batch, db)
            try settings?.makeCurrent(db)
            if let root = record.root, let changeGen = plan.rootChangeGen { try RootState.committed(root, changeGen: changeGen, db) }
            if seq == 1 { try MetadataStore.setSetting(SettingKey.wholeHistory, "1", db) }
            try ContainerFormat.noteRecord(format, seq: seq, db)
            try MetadataStore.setSetting(SettingKey.lastSeq, String(seq), db)
            if let hash { try MetadataStore.setSetting(SettingKey.lastRecordHash, hash, db) } else {
                try MetadataStore.removeSetting(SettingKey.lastRecordHash, db)
            }
            try MetadataStore.removeSetting(SettingKey.uncertainCommit, db)
        }
        lastSeq = seq
        uncertain = nil
        for entry in plan.entries { resurrected[entry.itemID] = nil }
        // The items' state (pending -> local) changed.
        invalidations.invalidate(plan.entries.map { .inode($0.ino, data: false) })
        let uploadedFiles = plan.entries.filter { entry in
            if case .upsert(let item) = entry.change { entry.upload != nil && item.kind == .file } else { false }
        }
        if !uploadedFiles.isEmpty { thumbnailEvents.report(.contentHere(uploadedFiles.map(\.ino))) }
        if feed.isWatched {
            let uploaded = plan.entries.filter { $0.upload != nil }.map(\.ino)
            let paths = (try? await metadata.read { db in try uploaded.map { try ItemRow.path(of: $0, db) } }) ?? []
            feed.emit(paths.map { ChangeEvent(.uploaded, path: $0, origin: .local) })
        }
        await purgeDeleted()
    }
}
