import ContentCache
import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import Synchronization
import Thumbnails

/// Thumbnails that travel with the container (issue 39): pictures of content this device
/// has are made here and committed with it (`ThumbnailMaker`), and other devices'
/// pictures go into this user's desktop cache before a viewer asks (`ThumbnailInstaller`).
/// It hears of content and of other devices' changes through the engine's
/// `ThumbnailEvents`, in order, on one task of its own.
public final class ThumbnailService: Sendable {
    let maker: ThumbnailMaker?
    let installer: ThumbnailInstaller?
    let engine: SyncEngine
    private let events: AsyncStream<ThumbnailEvents.Event>
    private let continuation: AsyncStream<ThumbnailEvents.Event>.Continuation
    private let consumer: Mutex<Task<Void, Never>?> = Mutex(nil)
    /// Events sent and handled, so `settle` knows when the queues hold all of them.
    private let counts = Mutex((sent: 0, handled: 0, started: false))

    public init(engine: SyncEngine, metadata: MetadataStore, cache: ContentCache, settings: ThumbnailSettings, thumbnailers: Thumbnailers, logger: Logger) {
        self.engine = engine
        maker = settings.making ? ThumbnailMaker(engine: engine, metadata: metadata, cache: cache, thumbnailers: thumbnailers, settings: settings, logger: logger) : nil
        installer = settings.cacheRoot.map { root in
            ThumbnailInstaller(engine: engine, metadata: metadata, desktop: FreedesktopCache(root: root), thumbnailers: thumbnailers, settings: settings, logger: logger)
        }
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Starts listening; checks every entry and every item with pictures once, and makes
    /// the pictures a stop left unmade.
    public func start() {
        guard maker != nil || installer != nil else { return counts.withLock { $0.started = true } }
        engine.thumbnailEvents.set { [self] event in send(event) }
        let (events, maker, installer) = (self.events, self.maker, self.installer)
        consumer.withLock { task in
            task = Task { [self] in
                await installer?.enqueueEverything()
                await maker?.enqueueUnpictured()
                self.counts.withLock { $0.started = true }
                for await event in events {
                    switch event {
                    case .contentHere(let inodes):
                        await maker?.enqueue(inodes)
                        await installer?.contentHere(inodes)
                    case .changed(let ids):
                        await installer?.enqueue(ids)
                    }
                    self.counts.withLock { $0.handled += 1 }
                }
            }
        }
    }

    /// Stops listening and drops what is queued (the pictures made so far stay recorded).
    public func stop() async {
        engine.thumbnailEvents.set(nil)
        continuation.finish()
        consumer.withLock { $0 }?.cancel()
        await maker?.stop()
        await installer?.stop()
    }

    /// An item changed here (renamed, moved, deleted, written): its entry follows.
    public func localChange(_ id: ItemID) {
        // Only the installer follows names: a device that installs nothing has no entry to move.
        guard installer != nil else { return }
        send(.changed([id]))
    }

    private func send(_ event: ThumbnailEvents.Event) {
        counts.withLock { $0.sent += 1 }
        continuation.yield(event)
    }

    /// For a thumbnailer about to read a file that is not here: its pictures from the
    /// container, installed now if it has any; true if they are.
    public func installNow(_ id: ItemID) async -> Bool {
        await installer?.installNow(id) ?? false
    }

    /// Waits until every event so far is handled and the queues are empty (for tests).
    public func settle() async {
        while counts.withLock({ !$0.started || $0.sent != $0.handled }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        await maker?.idle()
        await installer?.idle()
    }
}
