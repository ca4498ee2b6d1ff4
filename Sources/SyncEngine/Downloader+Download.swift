import ContainerStore
import ContentCache
import FileCoordinator
import Inodes
import ItemModel
import MetadataStore

/// One download: blocks fetched into a temporary cache file (the ones readers wait for
/// first), then the file installed as the item's content.
extension Downloader {
    func startDownload(_ ino: Inode) async {
        do {
            _ = try await ensureStream(ino)
        } catch {
            finishWaiters(ino, .failure(error))
        }
    }

    /// The running download of a placeholder, started if there is none; nil (and every
    /// waiter answered) if the item needs no download.
    func ensureStream(_ ino: Inode) async throws(SyncError) -> Stream? {
        if let stream = streams[ino] { return stream }
        let row = try await calls.read("cannot read inode \(ino)") { db in try ItemRow.find(ino: ino, db) }
        if let stream = streams[ino] { return stream }
        guard let row, row.itemKind == .file, row.contentState == .placeholder, !row.deleted else {
            finishWaiters(ino, row == nil ? .failure(SyncError(code: .notFound, message: "inode \(ino) no longer exists")) : .success(()))
            return nil
        }
        if !reachability.isOnline, let first = row.blockList.first {
            // Known offline: one bounded check, so opening fails with a clear error rather
            // than returning a file whose every read fails.
            do throws(SyncError) {
                _ = try await calls.store("cannot download \(row.itemName)") { store throws(StoreError) in
                    try await store.exists(ContainerLayout.blockKey(first.hash))
                }
                reachability.set(online: true)
            } catch {
                logger.warning("cannot open \(row.itemName): \(error)")
                throw error
            }
            if let stream = streams[ino] { return stream }
        }
        let temporary: TemporaryCacheFile
        do { temporary = try cache.makeTemporary() } catch {
            throw SyncError.cacheWrite("cannot make room for \(row.itemName)", error)
        }
        let generation = nextGeneration
        nextGeneration += 1
        let stream = Stream(generation: generation, path: temporary.path)
        streams[ino] = stream
        transfers.registerStream(generation, lengths: row.blockList.map(\.length))
        transfers.begin(ino, .download, total: row.size)
        Task { await self.run(row, temporary, generation) }
        return stream
    }

    /// Downloads and installs, then answers every reader and waiter of this download.
    private func run(_ row: ItemRow, _ temporary: TemporaryCacheFile, _ generation: UInt64) async {
        let ino = row.inode
        var failure: TransferTable.Failure?
        do {
            try await fetchBlocks(row, temporary, generation)
            try await install(row, temporary)
        } catch {
            logger.error("download of \(row.itemName) (inode \(ino)) failed: \(error)")
            failure = TransferTable.Failure(
                reason: error.code == .corrupt ? error.message : error.description,
                unreachable: error.code == .unreachable, noSpace: error.code == .diskFull
            )
            if error.code == .unreachable { reachability.set(online: false) }
            cache.discard(temporary)
        }
        transfers.end(ino, error: failure?.reason)
        transfers.finishStream(generation, failure: failure)
        let readers = streams.removeValue(forKey: ino)?.readers ?? [:]
        for reader in readers.values {
            if let failure { reader.continuation.resume(throwing: Self.error(failure)) } else { reader.continuation.resume() }
        }
        finishWaiters(ino, failure.map { .failure(Self.error($0)) } ?? .success(()))
    }

    /// Fetches every block into the temporary file, up to `parallelTransfers` at once. The
    /// first block (the one a reader waits for) goes alone: others fetched and hashed beside
    /// it would delay the first byte. A block a reader waits for is started next.
    private func fetchBlocks(_ row: ItemRow, _ temporary: TemporaryCacheFile, _ generation: UInt64) async throws(SyncError) {
        let ino = row.inode
        let blocks = row.blockList
        var offsets: [Int64] = []
        var total: Int64 = 0
        for block in blocks {
            offsets.append(total)
            total += block.length
        }
        var started = Set<Int>()
        var cursor = 0
        var downloaded: Int64 = 0
        let (fetcher, what) = (self.fetcher, "\(row.itemName) (\(row.itemID))")
        do {
            try await withThrowingTaskGroup(of: Int.self) { group in
                var inFlight = 0
                while started.count < blocks.count || inFlight > 0 {
                    try Task.checkCancellation(or: SyncError(code: .cancelled, message: "download cancelled"))
                    let window = started.count > inFlight ? parallelTransfers : 1
                    if inFlight < window && started.count < blocks.count {
                        let index = nextBlock(ino, started: started, cursor: cursor, count: blocks.count)
                        cursor = index + 1
                        started.insert(index)
                        let (block, at) = (blocks[index], offsets[index])
                        group.addTask {
                            try await fetcher.fetch(block, into: temporary.fd, at: at, of: what)
                            return index
                        }
                        inFlight += 1
                        continue
                    }
                    guard let index = try await group.next() else { break }
                    inFlight -= 1
                    downloaded += blocks[index].length
                    transfers.markPresent(generation, index)
                    transfers.progress(ino, done: downloaded)
                    wakeReaders(ino, generation)
                }
            }
        } catch {
            throw SyncError.wrap(error, "cannot download \(row.itemName)")
        }
    }

    /// The block a reader waits for if there is one, else the next one in order.
    private func nextBlock(_ ino: Inode, started: Set<Int>, cursor: Int, count: Int) -> Int {
        if let wanted = streams[ino]?.wanted, !started.contains(wanted) {
            streams[ino]?.wanted = nil
            return wanted
        }
        return (cursor..<count).first { !started.contains($0) } ?? (0..<count).first { !started.contains($0) }!
    }

    /// Makes the temporary file the item's content, under a short exclusive lease, unless
    /// the item changed meanwhile (then readers keep the version they opened).
    private func install(_ row: ItemRow, _ temporary: TemporaryCacheFile) async throws(SyncError) {
        let ino = row.inode
        let leases: LeaseSet
        do {
            leases = try await coordinator.acquire([LeaseRequest(ino, .exclusive)], owner: "sync: install \(row.itemName)")
        } catch {
            throw SyncError(code: .cancelled, message: "cancelled", cause: error)
        }
        defer { leases.release() }
        let current = try await calls.read("cannot read inode \(ino)") { db in try ItemRow.find(ino: ino, db) }
        guard let current, current.contentState == .placeholder, current.blockList == row.blockList else {
            cache.discard(temporary)
            return
        }
        do {
            try await cache.installDurably(temporary, as: ino, mtime: current.mtime)
        } catch {
            throw SyncError.cacheWrite("cannot install \(row.itemName)", error)
        }
        // Only the content state: other columns may have moved on (a commit, a chmod)
        // meanwhile; not the ctime, which tar reading a placeholder would see move.
        _ = try await calls.write("cannot record download of \(row.itemName)") { db in
            try ItemRow.setContentState(.local, of: ino, db)
        }
        invalidations.invalidate([.inode(ino, data: false)])
        if feed.isWatched, let path = try? await calls.metadata.read({ db in try ItemRow.path(of: ino, db) }) {
            feed.emit(ChangeEvent(.downloaded, path: path, origin: .remote))
        }
    }
}
