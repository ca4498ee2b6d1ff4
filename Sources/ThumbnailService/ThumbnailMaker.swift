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
    /// Contents a thumbnailer failed on (by `MadeThumbnails.contentKey`): not tried again.
    private var failed: Set<String> = []

    init(engine: SyncEngine, metadata: MetadataStore, cache: ContentCache, thumbnailers: Thumbnailers, settings: ThumbnailSettings, logger: Logger) {
        self.engine = engine
        self.metadata = metadata
        self.cache = cache
        self.thumbnailers = thumbnailers
        self.settings = settings
        self.logger = logger
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
        let key = MadeThumbnails.contentKey(source.content)
        guard !failed.contains(key) else { return }
        let pictures: [Int: [UInt8]]
        do {
            pictures = try await thumbnailers.make(source: cache.path(for: ino), name: source.name, sizes: ThumbnailSettings.madeSizes, timeout: .seconds(30))
        } catch {
            failed.insert(key)
            logger.info("no thumbnail of \(String(decoding: source.name, as: UTF8.self)): \(error)")
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

    private func source(_ ino: Inode) async -> Source? {
        let thumbnailers = self.thumbnailers
        let largest = settings.largestSource
        do {
            return try await metadata.read { db -> Source? in
                guard let row = try ItemRow.find(ino: ino, db), row.itemKind == .file, !row.deleted, !row.isIgnored,
                      row.contentState == .local, !row.dirtyFlags.contains(.content), row.size > 0, row.size <= largest,
                      thumbnailers.mimeType(name: row.itemName.bytes) != nil,
                      let base = try BaseSnapshots.find(row.itemID, db), let content = base.blocks, content.sameContent(as: row.blockList),
                      (base.thumbnails ?? []).isEmpty else { return nil }
                return Source(id: row.itemID, name: row.itemName.bytes, content: content, changeGen: row.changeGen)
            }
        } catch {
            logger.error("cannot read inode \(ino) to make its thumbnail: \(error)")
            return nil
        }
    }
}
