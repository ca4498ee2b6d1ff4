import ContentCache
import Foundation
import Glibc
import Inodes
import ItemModel
import MetadataStore

/// Block fetches of partial files: a queue by priority (readers, readahead, whole files),
/// at most `parallelTransfers` transfers at once and as many again for readers, so a reader
/// never waits behind a whole-file download. One fetch per block, whoever asks for it; a
/// block queued beside others of its file in the same pack goes in one ranged `GET` with
/// them (a large file's chunks lie in order in its packs).
extension Downloader {
    /// Fetches these blocks of a fill (those not here yet) and returns when they are here,
    /// or throws the first failure. A cancelled caller stops waiting; the fetches go on.
    func fetch(_ partial: PartialContent, _ indices: [Int], priority: Priority) async throws {
        let wanted = indices.filter { !partial.isPresent($0) }
        guard !wanted.isEmpty else { return }
        enqueue(partial, wanted, priority: priority)
        for index in wanted {
            try await waitFor(BlockKey(generation: partial.generation, index: index), partial)
        }
    }

    /// Blocks a reader needs now.
    public func read(_ partial: PartialContent, blocks: [Int]) async throws {
        try await fetch(partial, blocks, priority: .reader)
    }

    /// Blocks a reader will probably want next, behind what readers wait for. `arrived` is
    /// told of each as it comes, in or failed, in the order they come: the blocks of a batch
    /// travel in several ranged reads at once, and a later one's blocks may be in first. A
    /// failure is noted for the file (`noteFailure`) and is the reader's to meet when it
    /// reads there.
    public func readAhead(_ partial: PartialContent, blocks: [Int], arrived: @Sendable (Int, Bool) -> Void) async {
        let wanted = blocks.filter { !partial.isPresent($0) }
        enqueue(partial, wanted, priority: .readahead)
        await withTaskGroup(of: (Int, Bool).self) { group in
            for index in blocks {
                group.addTask {
                    let key = BlockKey(generation: partial.generation, index: index)
                    do { try await self.waitFor(key, partial, priority: .readahead) } catch { return (index, false) }
                    return (index, true)
                }
            }
            for await (index, fetched) in group { arrived(index, fetched) }
        }
    }

    private func waitFor(_ key: BlockKey, _ partial: PartialContent, priority: Priority = .reader) async throws {
        let waiter = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else if partial.isPresent(key.index) {
                    continuation.resume()
                } else if queued[key] == nil && running[key] == nil {
                    // Failed between the enqueue and this wait: ask again, as urgently.
                    blockWaiters[key, default: [:]][waiter] = continuation
                    enqueue(partial, [key.index], priority: priority)
                } else {
                    blockWaiters[key, default: [:]][waiter] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(key, waiter) }
        }
    }

    private func cancelWaiter(_ key: BlockKey, _ waiter: UUID) {
        blockWaiters[key]?.removeValue(forKey: waiter)?.resume(throwing: CancellationError())
    }

    private func enqueue(_ partial: PartialContent, _ indices: [Int], priority: Priority) {
        for index in indices {
            let key = BlockKey(generation: partial.generation, index: index)
            if running[key] != nil { continue }
            if var job = queued[key] {
                if priority < job.priority {
                    job.priority = priority
                    queued[key] = job
                }
                continue
            }
            nextOrder += 1
            queued[key] = Job(partial: partial, index: index, priority: priority, order: nextOrder)
        }
        startJobs()
    }

    /// Starts queued fetches while there are free slots: `parallelTransfers` transfers for
    /// all, and as many again for readers only.
    private func startJobs() {
        while let (key, job) = queued.min(by: { ($0.value.priority, $0.value.order) < ($1.value.priority, $1.value.order) }) {
            // A run is a reader's if any of its blocks is.
            let transfers = Dictionary(running.values.map { ($0.transfer, $0.priority == .reader) }) { $0 || $1 }
            let readers = transfers.values.count { $0 }
            let others = transfers.count - readers
            let free = job.priority == .reader ? readers < parallelTransfers || others + readers < parallelTransfers
                : others + readers < parallelTransfers
            guard free else { return }
            queued[key] = nil
            let run = takeNeighbours(of: job).map { member in
                var member = member
                member.transfer = job.order
                return member
            }
            for member in run { running[member.key] = member }
            if run.count > 1 {
                Task { await self.fetchRun(run, urgent: job.priority == .reader) }
            } else {
                Task { await self.run(job, key) }
            }
        }
    }

    /// `job` and the queued blocks of its fill beside it in its pack (by index, as a file's
    /// chunks are packed in order), taken from the queue: one run within `neighbourGap`
    /// and `largestRun`, in offset order.
    private func takeNeighbours(of job: Job) -> [Job] {
        let blocks = job.partial.blocks
        guard let pack = blocks[job.index].pack, blocks[job.index].inline == nil else { return [job] }
        var (start, end) = ContainerLayout.location(of: blocks[job.index]).range.map { ($0.lowerBound, $0.upperBound) } ?? (0, 0)
        // The next block by index, if it lies after the run (`forward`) or before it in the pack.
        func next(_ index: Int, forward: Bool) -> (Job, Range<Int64>)? {
            guard blocks.indices.contains(index), blocks[index].pack == pack, blocks[index].inline == nil,
                  let queuedJob = queued[BlockKey(generation: job.partial.generation, index: index)],
                  let range = ContainerLayout.location(of: blocks[index]).range else { return nil }
            let apart = forward ? range.lowerBound - end : start - range.upperBound
            let span = forward ? range.upperBound - start : end - range.lowerBound
            guard apart >= 0, apart <= Self.neighbourGap, span <= Self.largestRun else { return nil }
            return (queuedJob, range)
        }
        var (before, after) = ([Job](), [Job]())
        while let (found, range) = next(job.index + after.count + 1, forward: true) {
            after.append(found)
            end = range.upperBound
        }
        while let (found, range) = next(job.index - before.count - 1, forward: false) {
            before.append(found)
            start = range.lowerBound
        }
        let run = before.reversed() + [job] + after
        for member in run { queued[member.key] = nil }
        return run
    }

    private func run(_ job: Job, _ key: BlockKey) async {
        let result: Result<Void, any Error>
        do {
            try await fetchAndRecord(job.partial, job.index, urgent: job.priority == .reader)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        finished(key, result)
        startJobs()
    }

    /// A block fetch is over: whoever waits for it goes on (or gets its failure).
    private func finished(_ key: BlockKey, _ result: Result<Void, any Error>) {
        running[key] = nil
        let waiting = blockWaiters.removeValue(forKey: key) ?? [:]
        for continuation in waiting.values { continuation.resume(with: result) }
    }

    /// One block: fetched, verified and written, then marked here (readers go on at once);
    /// made durable and recorded in the background (`persistSoon`), so a sequential reader
    /// never waits for an fdatasync.
    private func fetchAndRecord(_ partial: PartialContent, _ index: Int, urgent: Bool) async throws(SyncError) {
        let (block, offset, ino) = (partial.blocks[index], partial.offsets[index], partial.ino)
        do {
            try await fetcher.fetch(block, into: partial.fd, at: offset, of: "inode \(ino)", urgent: urgent)
        } catch {
            noteFailure(ino, error)
            throw error
        }
        recordFetched(partial, index)
    }

    /// A block is written and checked: readers go on at once, the fill's progress moves,
    /// and it is made durable in the background.
    private func recordFetched(_ partial: PartialContent, _ index: Int) {
        partial.markPresent(index)
        if filling[partial.ino] != nil { transfers.progress(partial.ino, done: partial.presentBytes) }
        persistSoon(partial)
    }

    /// Makes the fill's written blocks durable and records them, once for any number of
    /// blocks that arrive meanwhile; completes the file when they are all of them.
    private func persistSoon(_ partial: PartialContent) {
        guard !persisting.contains(partial.generation) else {
            persistAgain.insert(partial.generation)
            return
        }
        persisting.insert(partial.generation)
        Task {
            repeat {
                persistAgain.remove(partial.generation)
                do { try await persist(partial) } catch {
                    logger.error("cannot record the fetched blocks of inode \(partial.ino): \(error)")
                }
            } while persistAgain.contains(partial.generation)
            persisting.remove(partial.generation)
        }
    }

    /// fdatasync, then the blocks written before it recorded (a crash never leaves a block
    /// marked that is not on disk); the file made local if that was all of them.
    func persist(_ partial: PartialContent) async throws(SyncError) {
        let (bitmap, complete) = partial.snapshot()
        do {
            _ = try await OffloadedWork.run { () throws(SystemError) in try Syscall.check("fdatasync") { fdatasync(partial.fd) } }
        } catch {
            throw SyncError.cacheWrite("cannot write inode \(partial.ino) to the cache", error)
        }
        let ino = partial.ino
        _ = try await calls.write("cannot record the fetched blocks of inode \(ino)") { db in
            try FetchedBlocks.record(ino, generation: partial.generation, bitmap: bitmap, db)
        }
        if complete {
            try await self.complete(partial)
        } else {
            // `du` and `stat` count what is here.
            invalidations.invalidate([.inode(ino, data: false)])
        }
    }

    private func noteFailure(_ ino: Inode, _ error: SyncError) {
        logger.error("fetching a block of inode \(ino) failed: \(error)")
        if error.code == .unreachable { reachability.set(online: false) }
        transfers.noteError(ino, Self.reason(error))
    }

    /// Every block is here: the item becomes local, with the cache file's mtime the item's
    /// (writing the blocks moved it). Nothing if the fill is no longer the item's.
    func complete(_ partial: PartialContent) async throws(SyncError) {
        let ino = partial.ino
        let cache = self.cache
        let completed = try await calls.write("cannot record the download of inode \(ino)") { db -> Bool in
            guard let row = try ItemRow.find(ino: ino, db), row.contentState == .partial, row.blockList.sameContent(as: partial.blocks) else { return false }
            cache.setModificationTime(fd: partial.fd, nanoseconds: row.mtime)
            return try FetchedBlocks.complete(ino, generation: partial.generation, db)
        }
        guard completed else { return }
        partials.forget(ino)
        transfers.clearError(ino)
        invalidations.invalidate([.inode(ino, data: false)])
        thumbnailEvents.report(.contentHere([ino]))
        if feed.isWatched, let path = try? await calls.metadata.read({ db in try ItemRow.path(of: ino, db) }) {
            feed.emit(ChangeEvent(.downloaded, path: path, origin: .remote))
        }
    }
}

/// Neighbouring packed blobs fetched together: small files packed side by side (what a
/// push of a folder makes) come back with one ranged `GET` per run instead of one each.
extension Downloader {
    /// Largest gap of unwanted bytes inside a run, and largest run: a whole pack (up to
    /// `ChunkPack.limit` and a chunk), as the readahead asks a large file's packs
    /// whole. A run is streamed, so its first blobs come as soon as they would alone.
    static let neighbourGap: Int64 = 64 << 10
    static let largestRun: Int64 = 16 << 20

    /// Fetches the missing packed blocks of these files in runs of neighbours; returns
    /// when they are done (each file is then completed in the background, or left to a
    /// block fetch of its own if its run failed).
    func fetchPackedNeighbours(_ inos: [Inode]) async {
        var blobs: [Job] = []
        for ino in inos {
            guard let partial = try? await startFill(ino) else { continue }
            for index in partial.missing(offset: 0, length: Int(clamping: partial.size)) {
                let block = partial.blocks[index]
                let key = BlockKey(generation: partial.generation, index: index)
                guard block.pack != nil, block.inline == nil, queued[key] == nil, running[key] == nil else { continue }
                nextOrder += 1
                blobs.append(Job(partial: partial, index: index, priority: .readahead, order: nextOrder))
            }
        }
        // Looked at again with no suspension before the runs are registered: a reader may
        // have started a fetch of one of them meanwhile (the `startFill`s above suspend), and
        // a second write of a block after its file completed would move the file's mtime
        // (tar: "file changed as we read it").
        let fresh = blobs.filter { job in
            let key = BlockKey(generation: job.partial.generation, index: job.index)
            return queued[key] == nil && running[key] == nil && !job.partial.isPresent(job.index)
        }
        let runs = Self.neighbourRuns(fresh).map { run in run.map { job in
            var member = job
            member.transfer = run[0].order
            return member
        } }
        for job in runs.joined() { running[job.key] = job }
        let width = parallelTransfers
        await withTaskGroup(of: Void.self) { group in
            var pending = runs[...]
            func startNext() {
                guard let run = pending.popFirst() else { return }
                group.addTask { await self.fetchRun(run, urgent: false) }
            }
            for _ in 0..<width { startNext() }
            while await group.next() != nil { startNext() }
        }
    }

    /// Runs of two or more blobs of one pack, in offset order, whose gaps and length stay
    /// within `neighbourGap` and `largestRun`.
    static func neighbourRuns(_ blobs: [Job]) -> [[Job]] {
        let byPack = Dictionary(grouping: blobs) { $0.partial.blocks[$0.index].pack ?? "" }
        var runs: [[Job]] = []
        for (_, jobs) in byPack {
            var run: [Job] = []
            var (start, end): (Int64, Int64) = (0, 0)
            for job in jobs.sorted(by: { ($0.partial.blocks[$0.index].offset ?? 0) < ($1.partial.blocks[$1.index].offset ?? 0) }) {
                let block = job.partial.blocks[job.index]
                let offset = block.offset ?? 0
                if !run.isEmpty && (offset - end > neighbourGap || offset + block.storedLength - start > largestRun || offset < end) {
                    if run.count > 1 { runs.append(run) }
                    run = []
                }
                if run.isEmpty { start = offset }
                run.append(job)
                end = max(end, offset + block.storedLength)
            }
            if run.count > 1 { runs.append(run) }
        }
        return runs
    }

    /// Fetches a run with one ranged `GET`, each block marked here as it arrives. A pack
    /// gone (a collector moved the blobs) fetches each blob alone, where the database says
    /// it went (`BlockFetcher.fetch`).
    private func fetchRun(_ run: [Job], urgent: Bool) async {
        let blobs = run.map { job in
            (block: job.partial.blocks[job.index], fd: job.partial.fd, offset: job.partial.offsets[job.index], what: "inode \(job.partial.ino)")
        }
        do {
            try await fetcher.fetchNeighbours(blobs, urgent: urgent) { index, failure in
                await self.arrived(run[index], failure.map { .failure($0) } ?? .success(()))
            }
        } catch where error.code == .notFound {
            for job in run where isRunning(job) { await self.run(job, job.key) }
            return
        } catch {
            for job in run { arrived(job, .failure(error)) }
        }
        startJobs()
    }

    /// The job's transfer still runs it (a transfer given up on by its deadline may write a
    /// block after its blocks were failed and asked again).
    private func isRunning(_ job: Job) -> Bool {
        running[job.key]?.transfer == job.transfer
    }

    /// A block of a run is in (written and checked) or failed.
    private func arrived(_ job: Job, _ result: Result<Void, SyncError>) {
        if case .failure(let failure) = result {
            guard isRunning(job) else { return }
            noteFailure(job.partial.ino, failure)
        } else {
            recordFetched(job.partial, job.index)
            guard isRunning(job) else { return }
        }
        finished(job.key, result.mapError { $0 as any Error })
    }
}
