import ContainerStore
import ItemModel
import MetadataStore

/// Repacking (format 2): a collection run moves the named blobs of packs that are mostly
/// garbage into new packs and commits the moves as records of their own
/// (`JournalRecord.relocate`); the packs left behind are then garbage for its sweep.
extension SyncEngine {
    /// Repacks what `mark` shows is mostly garbage; true if moves were committed and
    /// applied here (the mark is then out of date).
    func repack(_ mark: Collector.Mark, stored: [StoredObject], report: inout CollectionReport) async throws(SyncError) -> Bool {
        let repacker = Repacker(calls: calls, below: configuration.repackBelow)
        let sources = repacker.sources(mark, stored: stored)
        guard !sources.isEmpty else { return false }
        let copy = try await repacker.copy(sources, mark)
        report.unreadableBlobs = copy.unreadable > 0 ? copy.unreadable : nil
        guard !copy.moves.isEmpty else { return false }
        let written = Set(copy.written.map(ContainerLayout.packKey))
        let size = max(1, configuration.maxOperationsPerRecord)
        for start in stride(from: 0, to: copy.moves.count, by: size) {
            try await commit(Array(copy.moves[start ..< min(start + size, copy.moves.count)]), writtenPacks: written)
        }
        report.repacked = sources.count
        report.relocated = copy.moves.count
        report.repackedBytes = copy.bytesCopied
        logger.info("repacked \(sources.count) packs: \(copy.moves.count) blobs moved, \(copy.bytesCopied) bytes copied into \(copy.written.count) packs")
        return true
    }

    /// Whether the database's head is still `seq` (the applied record's transaction may
    /// be ahead of `lastSeq` while its task waits to resume).
    private func headMatches(_ seq: UInt64) async throws(SyncError) -> Bool {
        let stored = try await calls.read("cannot read the journal position") { db in try MetadataStore.setting(SettingKey.lastSeq, db) }
        return stored.flatMap(UInt64.init) == seq
    }

    /// Commits one record of moves at the head (after pulling, when another device took
    /// the key first) and applies it here. Rule W holds for it as for any record: the
    /// packs it names were written by this run and are in no collector's list.
    private func commit(_ moves: [BlobMove], writtenPacks: Set<String>) async throws(SyncError) {
        var record = JournalRecord(device: device.id, deviceName: device.name, commit: ItemID.random().rawValue, time: Timestamp.now(), ops: [])
        record.format = format.current
        record.relocate = moves
        for _ in 0 ..< 20 {
            // It follows the head as this device has it, which a lost race moves on. The
            // key is taken from the seq whose hash `prev` names: a pull that moved the head
            // while this waited means another try, since the next head's key with the old
            // head's hash would fork the journal.
            let head = lastSeq
            record.prev = try await lastRecordHash()
            let bytes: [UInt8]
            do { bytes = try RecordCodec.encode(record) } catch { throw SyncError(code: .store, message: "cannot encode the blob moves", cause: error) }
            let condemned = try await self.condemned.current(calls)
            guard writtenPacks.isDisjoint(with: condemned) else {
                throw SyncError(code: .busy, message: "another collector condemned the packs this run wrote; its moves are not committed")
            }
            guard lastSeq == head, try await headMatches(head) else {
                try await pullNow()
                continue
            }
            let key = ContainerLayout.journalKey(head + 1)
            let won = try await calls.store("cannot commit \(key)") { store throws(StoreError) in try await store.putIfAbsent(key, bytes) }
            try await pullNow()
            if won { return }
        }
        throw SyncError(code: .busy, message: "the journal moved on twenty times while the blob moves waited; the next run repacks again")
    }
}
