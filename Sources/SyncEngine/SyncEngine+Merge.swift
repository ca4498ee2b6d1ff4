import ContentCache
import Foundation
import Glibc
import Inodes
import ItemModel
import Merging
import MetadataStore

/// Changes held for a merge (`RecordApplier.mergeWait`), settled after each pull: the other
/// device's version and this device's edit, merged from the version both had (`TextMerge`)
/// into the same file, which stays this device's edit to push; the edit itself goes into
/// the store first, named by the next record's `merges` (`PendingMerges`). When they
/// cannot be merged, the usual conflict copy, with the reason.
extension SyncEngine {
    enum MergeAttempt { case merged, later, unmerged(String?) }

    func settleMerges() async throws(SyncError) {
        for change in held.values.filter(\.isMerge).sorted(by: { $0.seq < $1.seq }) {
            switch try await attemptMerge(change) {
            case .merged, .later: continue
            case .unmerged(let reason): try await releaseMerge(change, reason: reason)
            }
        }
    }

    private func attemptMerge(_ change: HeldChange) async throws(SyncError) -> MergeAttempt {
        // A delete that replaced the held version: the usual rules (the edit is kept).
        guard case .upsert(let theirs) = change.operation else { return .unmerged(nil) }
        let (row, base, pending, kinds) = try await calls.read("cannot read a file to merge") { db in
            (try ItemRow.find(id: theirs.id, db), try BaseSnapshots.find(theirs.id, db), try PendingMerges.find(theirs.id, db),
             try ContainerSettings.current(db).merging)
        }
        guard let row, !row.deleted, row.dirtyFlags.contains(.content), row.contentState == .local, let base else { return .unmerged(nil) }
        if activity.hasWriters(row.inode) { return .unmerged("a program has it open for writing here") }
        if let refusal = try await ruleRefusal(row) { return refusal }
        let name = row.itemName.description
        let generation = activity.writeGeneration(row.inode)
        // Not read whole when no kind would take it (the row's size lags behind the edit).
        if (cache.status(row.inode)?.size ?? 0) > MergeMethod.largestOfAnyKind { return .unmerged("larger than \(MergeMethod.largestOfAnyKind >> 20) MiB") }
        guard let ours = readLocal(row.inode) else { return .unmerged("the edit here cannot be read") }
        let method = MergeMethod.of(name: name, ours: ours)
        if let reason = method.refusal(kinds) { return .unmerged(reason) }
        // Each side within the kind's bound, the other two before they are fetched.
        guard max(Int64(ours.count), theirs.size, base.size) <= method.largest else { return .unmerged("larger than \(method.largest >> 20) MiB") }
        if method == .sqlite, let reason = try await journalRefusal(row) { return .unmerged(reason) }
        let (baseBytes, theirBytes): ([UInt8], [UInt8])
        do {
            (baseBytes, theirBytes) = (try await content(base.blocks ?? [], of: name), try await content(theirs.blocks ?? [], of: name))
        } catch {
            if error.code == .unreachable || error.code == .cancelled { return .later }
            return .unmerged("the version both devices had cannot be read from the store")
        }
        // This very merge, installed before a crash cut it short: the file is its result.
        // Or both devices made the same edit: it is the result, whatever the content.
        let redone = (pending?.note.with == change.seq && pending?.merged == ContentHasher.sha256Hex(ours)) || ours == theirBytes
        let merged: [UInt8]
        switch redone ? .merged(ours) : try await merge(method, base: baseBytes, ours: ours, theirs: theirBytes) {
        case .merged(let bytes): merged = bytes
        case .refused(let reason): return .unmerged(reason)
        }
        guard let note = try await keepInput(row, ours: ours, generation: generation, change: change, pending: pending, merged: (merged, method)) else {
            return .later
        }
        return try await install(merged, note: note, of: row, change: change, generation: generation)
    }

    /// This device's edit, stored as blocks and named by a durable pending merge before
    /// anything replaces it here; a merge made again after a crash finds its own result
    /// here, which is no edit. Nil if the file was written meanwhile.
    func keepInput(
        _ row: ItemRow, ours: [UInt8], generation: UInt64, change: HeldChange,
        pending: (note: MergeNote, merged: String)?, merged: (bytes: [UInt8], method: MergeMethod)
    ) async throws(SyncError) -> MergeNote? {
        var inputs = pending?.note.inputs ?? []
        if pending?.merged != ContentHasher.sha256Hex(ours) {
            guard let upload = try await uploader.upload(row), upload.writeGeneration == generation else { return nil }
            // Kept already by a merge cut short (a crash before it was installed).
            if !(inputs.last.map { $0.blocks.sameContent(as: upload.blocks) } ?? false) {
                inputs.append(MergeInput(device: device.name, time: Timestamp.now(), size: upload.size, mtime: upload.mtime, blocks: upload.blocks))
            }
        }
        let note = MergeNote(
            id: row.itemID, base: pending?.note.base ?? UInt64(max(1, row.baseSeq)), with: change.seq, kind: merged.method.name,
            inputs: Array(inputs.suffix(MergeNote.maxInputs))
        )
        let hash = ContentHasher.sha256Hex(merged.bytes)
        try await calls.write("cannot record the merge of \(row.itemName)") { db in try PendingMerges.set(note, merged: hash, db) }
        try await calls.syncToDisk("cannot make the merge of \(row.itemName) durable")
        return note
    }

    /// The merged content into the file's cache file (a rename: open readers keep what they
    /// opened), then the held change applied around it, under the leases of the change.
    private func install(_ merged: [UInt8], note: MergeNote, of row: ItemRow, change: HeldChange, generation: UInt64) async throws(SyncError) -> MergeAttempt {
        let temporary: TemporaryCacheFile
        do { temporary = try cache.makeTemporary() } catch {
            throw SyncError(code: .cache, message: "cannot write the merge of \(row.itemName)", cause: error)
        }
        let written = merged.withUnsafeBytes { Glibc.write(temporary.fd, $0.baseAddress, $0.count) }
        guard written == merged.count else {
            cache.discard(temporary)
            throw SyncError(code: .cache, message: "cannot write the merge of \(row.itemName): \(String(cString: strerror(errno)))")
        }
        let leases = try await leases(on: [change.operation], "sync: merge journal \(change.seq)")
        guard activity.writeGeneration(row.inode) == generation, !activity.hasWriters(row.inode), held[row.itemID]?.seq == change.seq else {
            leases.release()
            cache.discard(temporary)
            return .later
        }
        let now = Timestamp.now()
        do {
            // Before the bytes change: no upload may take the writes followed so far for them.
            activity.contentReplaced(row.inode)
            try await cache.installDurably(temporary, as: row.inode, mtime: now)
        } catch {
            leases.release()
            cache.discard(temporary)
            throw SyncError(code: .cache, message: "cannot install the merge of \(row.itemName)", cause: error)
        }
        let (device, activity, watched, resurrected) = (self.device, self.activity, feed.isWatched, self.resurrected)
        let size = Int64(merged.count)
        let message = "\(row.itemName): merged with \(change.device)'s version (journal \(change.seq)); the edit made here is kept as a version"
        let outcome: ApplyOutcome
        do {
            outcome = try await metadata.write { db in
                var applier = RecordApplier(db: db, device: device, activity: activity, now: now, watched: watched, resurrected: resurrected)
                try applier.applyMerged(change, size: size, mtime: now)
                try applier.noteMerged(row.inode, message)
                return applier.outcome
            }
        } catch {
            leases.release()
            throw SyncError(code: .metadata, message: "cannot apply the merge of \(row.itemName)", cause: error)
        }
        await finish(outcome, releasing: leases)
        logger.notice("merged: \(message) (\(note.inputs.count) edit(s) kept as versions of the next commit)")
        return .merged
    }

    /// A change held for a merge that cannot be made, applied by the usual rules: a
    /// conflict copy that says why.
    private func releaseMerge(_ change: HeldChange, reason: String?) async throws(SyncError) {
        let leases = try await leases(on: [change.operation], "sync: apply journal \(change.seq) unmerged")
        let (device, activity, watched, resurrected) = (self.device, self.activity, feed.isWatched, self.resurrected)
        let outcome: ApplyOutcome?
        do {
            outcome = try await metadata.write { db -> ApplyOutcome? in
                guard try HeldChanges.find(change.itemID, db)?.seq == change.seq else { return nil }
                var applier = RecordApplier(db: db, device: device, activity: activity, now: Timestamp.now(), watched: watched, resurrected: resurrected)
                applier.notMerged = reason
                try applier.applyHeld(change)
                try PendingMerges.remove(change.itemID, db)
                return applier.outcome
            }
        } catch {
            leases.release()
            throw SyncError(code: .metadata, message: "cannot apply the held change of journal \(change.seq)", cause: error)
        }
        guard let outcome else { return leases.release() }
        await finish(outcome, releasing: leases)
    }

    /// The whole content of the file here, or nil if it cannot be read now.
    nonisolated func readLocal(_ ino: Inode) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: cache.path(for: ino)) else { return nil }
        return Array(data)
    }

    func content(_ blocks: [BlockReference], of name: String) async throws(SyncError) -> [UInt8] {
        var bytes: [UInt8] = []
        for block in blocks { bytes += try await downloads.fetcher.bytes(of: block, of: name) }
        return bytes
    }
}
