import ContentCache
import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import Thumbnails

/// Makes pictures of committed content that is here (uploaded by this device, or
/// downloaded), one file at a time with the desktop's own thumbnailers, and keeps them
/// (`MadeThumbnails`) for the engine's next push. A picture is kept only if the content
/// did not change while it was made.
actor ThumbnailMaker {
    let engine: SyncEngine
    let metadata: MetadataStore
    let cache: ContentCache
    let thumbnailers: Thumbnailers
    let settings: ThumbnailSettings
    let logger: Logger
    private var queue = PendingKeys<Inode>()
    private var draining: Task<Void, Never>?

    init(engine: SyncEngine, metadata: MetadataStore, cache: ContentCache, thumbnailers: Thumbnailers, settings: ThumbnailSettings, logger: Logger) {
        self.engine = engine
        self.metadata = metadata
        self.cache = cache
        self.thumbnailers = thumbnailers
        self.settings = settings
        self.logger = logger
    }

    /// The local files a stop left without pictures (`MadeThumbnails.unpictured`).
    func enqueueUnpictured() async {
        guard engine.carriesThumbnails else { return }
        let thumbnailers = self.thumbnailers
        do {
            let files = try await metadata.read { db in try MadeThumbnails.unpictured(db) }
            enqueue(files.filter { thumbnailers.mimeType(name: $0.name) != nil }.map(\.ino))
        } catch {
            logger.error("cannot list the files without thumbnails: \(error)")
        }
    }

    func enqueue(_ inodes: [Inode]) {
        queue.add(inodes)
        guard draining == nil, !queue.isEmpty else { return }
        draining = Task { await drain() }
    }

    /// Waits until every queued file is done (for tests and a clean stop).
    func idle() async {
        while let draining { await draining.value }
    }

    func stop() {
        draining?.cancel()
        queue.removeAll()
    }

    private func drain() async {
        while !Task.isCancelled, let ino = queue.next() {
            await make(ino)
        }
        draining = nil
    }

    /// What a picture of the file needs: it is a local file of committed content with no
    /// picture yet, of a type a thumbnailer takes.
    private struct Source {
        var id: ItemID
        var name: [UInt8]
        var content: [BlockReference]
        var changeGen: Int64
    }

    private func make(_ ino: Inode) async {
        guard engine.carriesThumbnails, let source = await source(ino) else { return }
        let pictures: [Int: [UInt8]]
        do {
            pictures = try await thumbnailers.make(source: cache.path(for: ino), name: source.name, sizes: ThumbnailSettings.madeSizes, timeout: .seconds(120))
        } catch {
            logger.info("no thumbnail of \(String(decoding: source.name, as: UTF8.self)): \(error)")
            // Stopped, or out of time on a busy machine: not failed, tried again at the next start.
            if Task.isCancelled || error.code == .timedOut { return }
            await noteFailure(source)
            return
        }
        guard !pictures.isEmpty else { return }
        do {
            let kept = try await metadata.write { db -> Bool in
                // Changed while the thumbnailer read it: the picture may show neither version.
                guard let row = try ItemRow.find(ino: ino, db), row.itemID == source.id, row.changeGen == source.changeGen,
                      row.contentState == .local, !row.dirtyFlags.contains(.content), row.blockList.sameContent(as: source.content) else { return false }
                try MadeThumbnails.record(source.id, content: source.content, pictures: pictures, db)
                return true
            }
            if kept { engine.thumbnailsMade() }
        } catch {
            logger.error("cannot keep the thumbnail of \(String(decoding: source.name, as: UTF8.self)): \(error)")
        }
    }

    private func noteFailure(_ source: Source) async {
        do {
            try await metadata.write { db in try MadeThumbnails.noteFailure(source.id, content: source.content, db) }
        } catch {
            logger.error("cannot note that \(String(decoding: source.name, as: UTF8.self)) has no thumbnail: \(error)")
        }
    }

    private func source(_ ino: Inode) async -> Source? {
        let thumbnailers = self.thumbnailers
        let largest = settings.largestSource
        do {
            return try await metadata.read { db -> Source? in
                guard let row = try ItemRow.find(ino: ino, db), row.itemKind == .file, !row.deleted, !row.isIgnored,
                      row.contentState == .local, !row.dirtyFlags.contains(.content), row.size > 0, row.size <= largest,
                      thumbnailers.mimeType(name: row.itemName.bytes) != nil,
                      let base = try BaseSnapshots.find(row.itemID, db), let content = base.blocks, content.sameContent(as: row.blockList),
                      (base.thumbnails ?? []).isEmpty, try !MadeThumbnails.hasFailed(row.itemID, content: content, db) else { return nil }
                return Source(id: row.itemID, name: row.itemName.bytes, content: content, changeGen: row.changeGen)
            }
        } catch {
            logger.error("cannot read inode \(ino) to make its thumbnail: \(error)")
            return nil
        }
    }
}
