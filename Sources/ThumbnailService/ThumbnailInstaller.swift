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
    private var queue = PendingKeys<ItemID>()
    /// What to look at again besides the queue: every entry installed and every item
    /// with pictures (at start), every entry (a folder moved), or the entries whose item
    /// went (something deleted: perhaps a folder).
    private enum Sweep: Int, Comparable {
        case none, orphans, installed, everything
        static func < (first: Sweep, second: Sweep) -> Bool { first.rawValue < second.rawValue }
    }
    private var sweep = Sweep.none
    private var draining: Task<Void, Never>?

    init(engine: SyncEngine, metadata: MetadataStore, desktop: FreedesktopCache, thumbnailers: Thumbnailers, settings: ThumbnailSettings, logger: Logger) {
        self.engine = engine
        self.metadata = metadata
        self.desktop = desktop
        self.thumbnailers = thumbnailers
        self.settings = settings
        self.logger = logger
    }

    /// Items to look at again. A folder among them moved or went: the entries inside it
    /// are checked too.
    func enqueue(_ ids: [ItemID]) {
        queue.add(ids)
        start()
    }

    /// Every item with pictures, and every entry installed (at start, and after a folder changed).
    func enqueueEverything() {
        sweep = .everything
        start()
    }

    func idle() async {
        while let draining { await draining.value }
    }

    func stop() {
        draining?.cancel()
        queue.removeAll()
        sweep = .none
    }

    private func start() {
        guard draining == nil, sweep != .none || !queue.isEmpty else { return }
        draining = Task { await drain() }
    }

    private func drain() async {
        while !Task.isCancelled {
            if sweep != .none {
                let wanted = sweep
                sweep = .none
                queue.add(await candidates(wanted))
            }
            var batch: [ItemID] = []
            while batch.count < Self.batch, let id = queue.next() { batch.append(id) }
            guard !batch.isEmpty else { break }
            await update(batch)
        }
        draining = nil
    }

    /// Items looked at together: their pictures are fetched at once (over a far store, a
    /// round trip for all of them rather than one each).
    static let batch = 32

    private func update(_ ids: [ItemID]) async {
        var fetches: [Fetch] = []
        for id in ids {
            do {
                switch try await plan(id) {
                case .done(let next): sweep = max(sweep, next)
                case .fetch(let fetch): fetches.append(fetch)
                }
            } catch {
                logger.error("cannot install the thumbnail of item \(id): \(error)")
            }
        }
        let engine = self.engine
        let fetched = await withTaskGroup(of: (Int, Result<[UInt8], SyncError>).self) { group in
            for (index, fetch) in fetches.enumerated() {
                group.addTask {
                    do throws(SyncError) {
                        return (index, .success(try await engine.bytes(of: fetch.wanted.thumbnail, of: "the thumbnail of \(fetch.wanted.name)")))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results: [Int: Result<[UInt8], SyncError>] = [:]
            for await (index, result) in group { results[index] = result }
            return results
        }
        for (index, fetch) in fetches.enumerated() {
            do {
                guard let result = fetched[index] else { continue }
                try await install(fetch, png: try result.get())
            } catch {
                logger.error("cannot install the thumbnail of item \(fetch.id): \(error)")
            }
        }
    }

    /// Installs the item's pictures now, if it has any; true if its entry is current.
    func installNow(_ id: ItemID) async -> Bool {
        do {
            if case .fetch(let fetch) = try await plan(id) {
                try await install(fetch, png: try await engine.bytes(of: fetch.wanted.thumbnail, of: "the thumbnail of \(fetch.wanted.name)"))
            }
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

    private func candidates(_ sweep: Sweep) async -> [ItemID] {
        do {
            return try await metadata.read { db -> [ItemID] in
                switch sweep {
                case .none: []
                case .orphans: try InstalledThumbnails.orphaned(db)
                case .installed: try InstalledThumbnails.all(db).map(\.id)
                case .everything: try Set(InstalledThumbnails.all(db).map(\.id)).union(BaseSnapshots.withThumbnails(db)).sorted()
                }
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

    /// A picture to download, and where it goes.
    private struct Fetch {
        var id: ItemID
        var wanted: Wanted
        var installed: InstalledThumbnail?
    }

    private enum Step {
        /// Nothing to download; the sweep the item's change calls for (a folder that moved:
        /// the entries inside it; an item gone: perhaps a folder, with entries inside).
        case done(Sweep)
        case fetch(Fetch)
    }

    /// Brings the item's entry up to date where no download is needed: a removal, a move.
    private func plan(_ id: ItemID) async throws -> Step {
        let (wanted, installed, found) = try await read(id)
        switch found {
        case .folder: return .done(.installed)
        case .gone where installed == nil: return .done(.orphans)
        case .file, .gone: break
        }
        guard let wanted else {
            if let installed { try await forget(installed) }
            return .done(.none)
        }
        let key = MadeThumbnails.contentKey(wanted.thumbnail.blocks)
        if let installed, installed.pictures == key {
            if installed.uri != wanted.uri || installed.mtime != wanted.mtime || installed.size != wanted.size {
                try desktop.move(from: installed.uri, to: wanted.uri, mtime: wanted.mtime, size: wanted.size)
            }
            if desktop.isCurrent(uri: wanted.uri, sizes: sizes(from: wanted.thumbnail.size), mtime: wanted.mtime, size: wanted.size) {
                try await record(InstalledThumbnail(id: id, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size, pictures: key))
                return .done(.none)
            }
        }
        return .fetch(Fetch(id: id, wanted: wanted, installed: installed))
    }

    /// Checks the fetched picture (another device's: a PNG no larger than it says), makes
    /// the smaller sizes from it and installs them.
    private func install(_ fetch: Fetch, png: [UInt8]) async throws {
        let wanted = fetch.wanted
        let (width, height) = try PNGText.dimensions(png)
        guard max(width, height) <= wanted.thumbnail.size, width > 0, height > 0 else {
            throw ThumbnailError(code: .malformed, message: "the \(wanted.thumbnail.size) px thumbnail of \(wanted.name) is \(width)x\(height); not installed")
        }
        var pictures = [wanted.thumbnail.size: png]
        for size in sizes(from: wanted.thumbnail.size) where size < wanted.thumbnail.size {
            pictures[size] = try await thumbnailers.scale(png, to: size, timeout: .seconds(120))
        }
        if let installed = fetch.installed, installed.uri != wanted.uri { try desktop.remove(uri: installed.uri) }
        try desktop.install(pictures, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size)
        let key = MadeThumbnails.contentKey(wanted.thumbnail.blocks)
        try await record(InstalledThumbnail(id: fetch.id, uri: wanted.uri, mtime: wanted.mtime, size: wanted.size, pictures: key))
    }

    /// The sizes installed from a picture of `size`: it, and the smaller standard ones.
    private func sizes(from size: Int) -> [Int] {
        Thumbnail.sizes.filter { $0 <= size }.sorted()
    }

    /// What the item is here now.
    private enum Found { case file, folder, gone }

    private func read(_ id: ItemID) async throws -> (Wanted?, InstalledThumbnail?, Found) {
        let (mountpoint, preferred) = (Array(settings.mountpoint.utf8), settings.preferredSize)
        return try await metadata.read { db -> (Wanted?, InstalledThumbnail?, Found) in
            let installed = try InstalledThumbnails.find(id, db)
            guard let row = try ItemRow.find(id: id, db), !row.deleted else { return (nil, installed, .gone) }
            if row.itemKind == .directory { return (nil, installed, .folder) }
            // Content changed here: the viewer makes its own picture of it.
            guard row.itemKind == .file, !row.dirtyFlags.contains(.content), let base = try BaseSnapshots.find(id, db),
                  let thumbnail = Self.choose(base.thumbnails ?? [], preferred: preferred),
                  (base.blocks ?? []).sameContent(as: row.blockList), let path = try ItemRow.pathBytes(of: row.inode, db) else {
                return (nil, installed, .file)
            }
            let uri = ThumbnailURI.fileURI(path: mountpoint + path)
            let seconds = row.mtime >= 0 ? row.mtime / 1_000_000_000 : (row.mtime - 999_999_999) / 1_000_000_000
            let name = String(decoding: path, as: UTF8.self)
            return (Wanted(uri: uri, mtime: seconds, size: row.size, thumbnail: thumbnail, name: name), installed, .file)
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
