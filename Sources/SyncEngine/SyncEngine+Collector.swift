import ContainerStore
import Foundation
import ItemModel
import MetadataStore

/// Collection of a format-2 container (`ubiqfs gc`, and about daily by itself): one
/// collector at a time by the lease, a grace period between mark and sweep.
extension SyncEngine {
    /// Runs a whole collection: mark, condemn, wait `grace`, sweep, then compact the journal
    /// up to a checkpoint seen `horizon` ago. Throws if this device cannot collect (format
    /// 1, read-only, history incomplete) or another holds the lease.
    public func collect(grace: Duration? = nil, horizon: Duration? = nil) async throws(SyncError) -> CollectionReport {
        let grace = grace ?? configuration.collectionGrace
        try await checkCanCollect()
        guard !collectorRunning else { throw SyncError(code: .busy, message: "a collection is already running on this device") }
        collectorRunning = true
        defer { collectorRunning = false }
        let run = ItemID.random().rawValue
        let lease = try await takeLease(run: run, holding: grace * 2 + min(grace * 3, .seconds(600)))
        let collector = Collector(calls: calls)
        var report = CollectionReport()
        try await pullNow()
        var head = lastSeq
        // The mark keeps what the retention keeps now, not at the last prune.
        lastPrune = nil
        await pruneHistory()
        report.time = Timestamp.now()
        var mark = try await collector.mark(including: held.values.map(\.operation))
        var stored = try await collector.stored()
        if try await repack(mark, stored: stored, report: &report) {
            // The moves are applied here: the packs they left are named no more.
            head = lastSeq
            mark = try await collector.mark(including: held.values.map(\.operation))
            stored = try await collector.stored()
        }
        (report.live, report.history, report.trash) = (mark.live.values.reduce(0, +), mark.history.values.reduce(0, +), mark.trash.values.reduce(0, +))
        let garbage = collector.garbage(mark, stored: stored, report: &report)
        report.condemned = garbage.count
        if !garbage.isEmpty {
            var list = CondemnedList(
                run: run, device: device.id, head: head, created: report.time, keys: garbage.map(\.key), bytes: report.garbage
            )
            let key = ContainerLayout.condemnedKey(run)
            try await putList(list, key)
            // This device's own pushes know the list at once, whatever the grace.
            condemned.learn(key, list.keys)
            logger.info("collection \(run): condemned \(garbage.count) objects (\(report.garbage) bytes); sweeping in \(grace)")
            let condemnedAt = ContinuousClock.now
            do { try await Task.sleep(for: grace) } catch { throw SyncError(code: .cancelled, message: "collection cancelled before its sweep") }
            // A whole cycle of this device after the list: a push of ours that chose before
            // it has committed (and is rescued) or gone. Then the list must still be there,
            // and not too late (a machine that slept through the grace starts over).
            try await syncNow()
            try await checkStillCondemned(key, since: condemnedAt, grace: grace)
            let rescued = try await collector.named(after: head, through: lastSeq)
            try await collector.sweep(garbage, keeping: rescued, report: &report)
            list.swept = true
            list.keys = garbage.map(\.key).filter { !rescued.contains($0) }
            try await putList(list, key)
        }
        try await dropOldLists()
        try await compact(horizon: horizon ?? configuration.compactionHorizon, report: &report)
        await tidy("cannot release the collection lease \(lease)") { store throws(StoreError) in try await store.delete(lease) }
        try await remember(report)
        metrics.noteCollection(report)
        logger.info("collection \(run): deleted \(report.deleted) objects (\(report.deletedBytes) bytes), rescued \(report.rescued)")
        return report
    }

    /// Starts a collection in the background about once per `collectionInterval` (with a
    /// tenth of jitter, so devices do not try in step), where this device can collect.
    func collectWhenDue() async {
        let interval = configuration.collectionInterval
        guard format.current >= 2, !readOnly, collecting == nil, interval > .zero else { return }
        // A try that failed (another device collects, this one cannot) counts as one.
        let last = max(await lastCollection()?.time ?? started, collectionTried ?? started)
        let due = Double(interval.components.seconds) * Double.random(in: 1...1.1) * 1e9
        guard Double(Timestamp.now() - last) >= due else { return }
        collectionTried = Timestamp.now()
        collecting = Task {
            do throws(SyncError) {
                _ = try await self.collect()
            } catch {
                self.logger.notice("no collection now: \(error.message)")
            }
            self.collectionEnded()
        }
    }

    private func collectionEnded() {
        collecting = nil
    }

    /// The last collection's report (this device's), for `ubiqfs status`.
    public func lastCollection() async -> CollectionReport? {
        guard let text = try? await calls.read("cannot read the last collection", { db in try MetadataStore.setting(SettingKey.lastCollection, db) }) else {
            return nil
        }
        return try? JSONDecoder().decode(CollectionReport.self, from: Data(text.utf8))
    }

    /// The list is still in the store, and the sweep comes soon enough after it: another
    /// collector drops unswept lists only a month after they were made.
    private func checkStillCondemned(_ key: String, since: ContinuousClock.Instant, grace: Duration) async throws(SyncError) {
        let there = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.exists(key) }
        guard there, ContinuousClock.now - since < grace + .seconds(7 * 86400) else {
            throw SyncError(code: .cancelled, message: "collection abandoned: its list \(key) is gone or too old; the next run starts over")
        }
    }

    private func checkCanCollect() async throws(SyncError) {
        guard format.current >= 2 else {
            throw SyncError(code: .invalid, message: "collection needs a format-2 container (this one has format \(format.current)); format-1 stores keep everything")
        }
        if readOnly { throw SyncError(code: .readOnly, message: "the mount is read-only: it deletes nothing") }
        let (from, whole, formatTwo) = try await calls.read("cannot read the history's start") { db in
            (try MetadataStore.setting(SettingKey.historyFrom, db), try MetadataStore.setting(SettingKey.wholeHistory, db),
             try MetadataStore.setting(SettingKey.formatTwoFrom, db))
        }
        guard formatTwo != nil else {
            throw SyncError(code: .invalid, message: "the container was upgraded to format 2 and no format-2 record is committed yet; collection waits for one")
        }
        guard whole != nil else {
            throw SyncError(
                code: .invalid,
                message: "this device " + (from.map { "started from checkpoint \($0) and " } ?? "")
                    + "does not know every version and deleted item since the container began; collect on a device that replayed the whole journal"
            )
        }
    }

    /// Takes `gc/lease-<n+1>` once lease n has expired (or is ours); returns its key.
    private func takeLease(run: String, holding: Duration) async throws(SyncError) -> String {
        let numbers = try await calls.store("cannot list the collection leases") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.leasePrefix)
        }.compactMap { ContainerLayout.sequence(ofKey: $0, prefix: ContainerLayout.leasePrefix) }
        let newest = numbers.max() ?? 0
        let current = newest > 0 ? try await calls.store("cannot read the collection lease") { store throws(StoreError) in
            try await store.get(ContainerLayout.leaseKey(newest))
        } : nil
        // An unreadable lease is no lease: a collector that wrote it garbled holds nothing.
        if let current, let lease = try? RecordCodec.decode(CollectionLease.self, from: current), lease.expires > Timestamp.now(), lease.device != device.id {
            throw SyncError(code: .busy, message: "\(lease.deviceName) is collecting this container (its lease runs out in \((lease.expires - Timestamp.now()) / 1_000_000_000) s)")
        }
        let key = ContainerLayout.leaseKey(newest + 1)
        let lease = CollectionLease(run: run, device: device.id, deviceName: device.name, expires: Timestamp.now() + holding.components.seconds * 1_000_000_000)
        let bytes: [UInt8]
        do { bytes = try RecordCodec.encode(lease) } catch { throw SyncError(code: .store, message: "cannot encode the lease", cause: error) }
        let won = try await calls.store("cannot take the collection lease") { store throws(StoreError) in try await store.putIfAbsent(key, bytes) }
        guard won else { throw SyncError(code: .busy, message: "another device took the collection lease just now") }
        for number in numbers where number <= newest {
            await tidy("cannot delete an old collection lease") { store throws(StoreError) in try await store.delete(ContainerLayout.leaseKey(number)) }
        }
        return key
    }

    private func putList(_ list: CondemnedList, _ key: String) async throws(SyncError) {
        let bytes: [UInt8]
        do { bytes = try RecordCodec.encode(list) } catch { throw SyncError(code: .store, message: "cannot encode \(key)", cause: error) }
        try await calls.store("cannot write \(key)") { store throws(StoreError) in try await store.put(key, bytes) }
    }

    /// Swept lists go a week after they were made: they have told every writer. An
    /// unswept one (its collector was killed) goes after a month: its collector, should it
    /// wake, finds it gone and sweeps nothing.
    private func dropOldLists() async throws(SyncError) {
        let names = try await calls.store("cannot list the collector's lists") { store throws(StoreError) in
            try await store.listAll(prefix: ContainerLayout.gcPrefix)
        }.filter { $0.hasSuffix(".condemned") }
        for name in names {
            let bytes: [UInt8]
            do {
                bytes = try await calls.store("cannot read \(name)") { store throws(StoreError) in try await store.get(name) }
            } catch {
                // Another collector may have dropped it just now; the next run looks again.
                logger.notice("\(error)")
                continue
            }
            // An unreadable list stays: writers stop at it, and a person must look.
            guard let list = try? RecordCodec.decode(CondemnedList.self, from: bytes),
                  list.created < Timestamp.now() - (list.swept == true ? Collector.sweptListLife : Collector.unsweptListLife) else { continue }
            await tidy("cannot delete \(name)") { store throws(StoreError) in try await store.delete(name) }
        }
    }

    /// Cleaning up after a run: a failure is logged, and the next run tries again.
    func tidy(_ what: String, _ body: @escaping @Sendable (any ContainerStore) async throws(StoreError) -> Void) async {
        do {
            try await calls.store(what, body)
        } catch {
            logger.warning("\(what): \(error)")
        }
    }

    private func remember(_ report: CollectionReport) async throws(SyncError) {
        let text = String(decoding: (try? JSONEncoder().encode(report)) ?? Data(), as: UTF8.self)
        _ = try await calls.write("cannot record the collection") { db in
            try MetadataStore.setSetting(SettingKey.lastCollection, text, db)
        }
    }
}
