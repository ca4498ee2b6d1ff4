import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import Thumbnails

/// Puts other devices' pictures into the desktop's thumbnail cache, under the URI, mtime
/// and size a viewer checks, before a viewer asks; moves them when a file moves, and
/// removes them when it goes or gets content without pictures. What it wrote is in
/// `InstalledThumbnails`, so a rename costs no download.
actor ThumbnailInstaller {
    let engine: SyncEngine
    let metadata: MetadataStore
    let desktop: FreedesktopCache
    let thumbnailers: Thumbnailers
    let settings: ThumbnailSettings
    let logger: Logger
    private var queue: [ItemID] = []
    private var queued: Set<ItemID> = []
    private var everything = false
    private var draining: Task<Void, Never>?

    init(engine: SyncEngine, metadata: MetadataStore, desktop: FreedesktopCache, thumbnailers: Thumbnailers, settings: ThumbnailSettings, logger: Logger) {
        self.engine = engine
        self.metadata = metadata
        self.desktop = desktop
        self.thumbnailers = thumbnailers
        self.settings = settings
        self.logger = logger
    }

    /// Items to look at again. A folder among them moved or went: every installed entry
    /// is checked (their paths may have changed).
    func enqueue(_ ids: [ItemID]) {
        for id in ids where queued.insert(id).inserted { queue.append(id) }
        start()
    }

    /// Every item with pictures, and every entry installed (at start, and after a folder changed).
    func enqueueEverything() {
        everything = true
        start()
    }

    func idle() async {
        while let draining { await draining.value }
    }

    func stop() {
        draining?.cancel()
        (queue, queued, everything) = ([], [], false)
    }

    private func start() {
        guard draining == nil, everything || !queue.isEmpty else { return }
        draining = Task { await drain() }
    }

    private func drain() async {
        while !Task.isCancelled {
            if everything {
                everything = false
                for id in await allCandidates() where queued.insert(id).inserted { queue.append(id) }
            }
            guard !queue.isEmpty else { break }
            let id = queue.removeFirst()
            queued.remove(id)
            do {
                if try await update(id) { everything = true }
            } catch {
                logger.error("cannot install the thumbnail of item \(id): \(error)")
            }
        }
        draining = nil
    }

    /// Installs the item's pictures now, if it has any; true if its entry is current.
    func installNow(_ id: ItemID) async -> Bool {
        do {
            _ = try await update(id)
            return try await metadata.read { db in try InstalledThumbnails.find(id, db) } != nil
        } catch {
            logger.info("cannot install the thumbnail of item \(id) for a thumbnailer: \(error)")
            return false
        }
    }

    /// The files' content is here now: a viewer that failed to make their pictures
    /// before (it could not read them) may make them now.
    func contentHere(_ inodes: [Inode]) async {
        let mountpoint = Array(settings.mountpoint.utf8)
        do {
            let paths = try await metadata.read { db in try inodes.compactMap { try ItemRow.pathBytes(of: $0, db) } }
            for path in paths { try desktop.removeFailures(uri: ThumbnailURI.fileURI(path: mountpoint + path)) }
        } catch {
            logger.error("cannot clear failed thumbnails of downloaded files: \(error)")
        }
    }

    private func allCandidates() async -> [ItemID] {
        do {
            return try await metadata.read { db in
                try Set(InstalledThumbnails.all(db).map(\.id)).union(BaseSnapshots.withThumbnails(db)).sorted()
            }
        } catch {
            logger.error("cannot list the items with thumbnails: \(error)")
            return []
        }
    }

    /// What the cache should hold for the item now.
    private struct Wanted {
        var uri: String
        var mtime: Int64
        var size: Int64
        var thumbnail: Thumbnail
        var name: String
    }

    /// Brings the item's entry up to date; true if the item is a folder (its contents'
    /// entries are checked next).
    private func update(_ id: ItemID) async throws -> Bool {
        let (wanted, installed, isFolder) = try await read(id)
        if isFolder { return true }
        guard let wanted else {
            if let installed { try await forget(installed) }
            return false
        }
        let key = MadeThumbnails.contentKey(wanted.thumbnail.blocks)
        let sizes = sizes(from: wanted.thumbnail.size)
        if let installed, installed.pictures == key {
            if installed.uri != wanted.uri || installed.mtime != wanted.mtime || installed.size != wanted.size {
                try desktop.move(from: installed.uri, to: wanted.uri, mtime: wanted.mtime, size: wanted.size)
            }
            if desktop.isCurrent(uri: wanted.uri, sizes: sizes, mtime: wanted.mtime, size: wanted.size) {
                try await record(InstalledThumbnail(id: id, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size, pictures: key))
                return false
            }
        }
        if let installed, installed.uri != wanted.uri { try desktop.remove(uri: installed.uri) }
        let png = try await engine.bytes(of: wanted.thumbnail, of: "the thumbnail of \(wanted.name)")
        let (width, height) = try PNGText.dimensions(png)
        guard max(width, height) <= wanted.thumbnail.size, width > 0, height > 0 else {
            throw ThumbnailError(code: .malformed, message: "the \(wanted.thumbnail.size) px thumbnail of \(wanted.name) is \(width)x\(height); not installed")
        }
        var pictures = [wanted.thumbnail.size: png]
        for size in sizes where size < wanted.thumbnail.size {
            pictures[size] = try await thumbnailers.scale(png, to: size, timeout: .seconds(10))
        }
        try desktop.install(pictures, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size)
        try await record(InstalledThumbnail(id: id, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size, pictures: key))
        return false
    }

    /// The sizes installed from a picture of `size`: it, and the smaller standard ones.
    private func sizes(from size: Int) -> [Int] {
        Thumbnail.sizes.filter { $0 <= size }.sorted()
    }

    private func read(_ id: ItemID) async throws -> (Wanted?, InstalledThumbnail?, Bool) {
        let (mountpoint, preferred) = (Array(settings.mountpoint.utf8), settings.preferredSize)
        return try await metadata.read { db -> (Wanted?, InstalledThumbnail?, Bool) in
            let installed = try InstalledThumbnails.find(id, db)
            guard let row = try ItemRow.find(id: id, db), !row.deleted else { return (nil, installed, false) }
            if row.itemKind == .directory { return (nil, installed, true) }
            // Content changed here: the viewer makes its own picture of it.
            guard row.itemKind == .file, !row.dirtyFlags.contains(.content), let base = try BaseSnapshots.find(id, db),
                  let thumbnail = Self.choose(base.thumbnails ?? [], preferred: preferred),
                  (base.blocks ?? []).sameContent(as: row.blockList), let path = try ItemRow.pathBytes(of: row.inode, db) else {
                return (nil, installed, false)
            }
            let uri = ThumbnailURI.fileURI(path: mountpoint + path)
            let seconds = row.mtime >= 0 ? row.mtime / 1_000_000_000 : (row.mtime - 999_999_999) / 1_000_000_000
            let name = String(decoding: path, as: UTF8.self)
            return (Wanted(uri: uri, mtime: seconds, size: row.size, thumbnail: thumbnail, name: name), installed, false)
        }
    }

    /// The largest picture up to `preferred`, else the smallest above it.
    static func choose(_ thumbnails: [Thumbnail], preferred: Int) -> Thumbnail? {
        thumbnails.filter { $0.size <= preferred }.max { $0.size < $1.size } ?? thumbnails.min { $0.size < $1.size }
    }

    private func forget(_ installed: InstalledThumbnail) async throws {
        try desktop.remove(uri: installed.uri)
        let id = installed.id
        try await metadata.write { db in try InstalledThumbnails.remove(id, db) }
    }

    private func record(_ entry: InstalledThumbnail) async throws {
        try await metadata.write { db in try InstalledThumbnails.set(entry, db) }
    }
}
