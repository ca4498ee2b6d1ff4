import ContainerCrypto
import IgnoreRules
import ContainerStore
import ContentCache
import CSystemShims
import FileCoordinator
import Glibc
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import ThumbnailService
import Thumbnails

/// One device's parts, assembled in the one right order (health check, state, reconcile,
/// container, then the live tables, the sync engine, the filesystem core and recovery); used by the daemon and
/// by the tests that run devices without FUSE.
public struct DeviceStack: Sendable {
    public let metadata: MetadataStore
    public let cache: ContentCache
    public let coordinator: FileCoordinator
    public let handles: HandleTable
    public let notifier: KernelNotifier
    public let sync: SyncEngine
    public let core: FileSystemCore
    public let controlSocketPath: String
    /// Pictures of files for viewers; nil when thumbnails are off.
    public let thumbnails: ThumbnailService?
    /// The master key of an encrypted container, in the state dir (mode 0600).
    public static let keyFile = "container.key"

    public static func open(
        store: any ContainerStore, stateDir: String, deviceName: String, configuration: SyncConfiguration, logger: Logger,
        accessTimes: AccessTimes = AccessTimes(), deviceIgnores: IgnoreList = IgnoreList(folder: [], source: "this device's list", patterns: []),
        lookers: Lookers = .defaults, thumbnails: ThumbnailSettings? = nil, thumbnailers: Thumbnailers = .fromEnvironment()
    ) async throws -> DeviceStack {
        try StateRecovery.quarantineIfDamaged(stateDir: stateDir, logger: logger)
        let metadata = try MetadataStore(path: stateDir + "/state.db")
        let cache = try ContentCache(directory: stateDir + "/cache")
        let crashed = try !CleanStop.consume(metadata)
        try StateReconciler.reconcile(metadata: metadata, cache: cache, afterCrash: crashed, logger: logger)
        var unlock = configuration.encryption
        unlock.keyFile = unlock.keyFile ?? stateDir + "/" + Self.keyFile
        let (info, device, cipher) = try await ContainerBootstrap.open(
            store: store, metadata: metadata, deviceName: deviceName, timeout: configuration.storeTimeout,
            newestFormat: configuration.newestFormat, upgrade: !configuration.readOnly, unlock: unlock
        )
        // What startup decided (reconciled rows, this device's identity, the clean-stop mark
        // gone) is on disk before the first change: the database's own name too.
        try await OffloadedWork.run { () throws(CacheError) in try cache.syncFolder() }
        try await metadata.syncToDisk()
        try await OffloadedWork.run { () throws(SystemError) in try Syscall.fsyncDirectory(stateDir) }
        // An encrypted container's objects are sealed and opened on their way.
        let store: any ContainerStore = cipher.map { SealedStore(store, cipher: $0) } ?? store
        let handles = HandleTable()
        let notifier = KernelNotifier(handles: handles)
        let ignores = IgnoreIndex(device: deviceIgnores, cache: cache, logger: logger)
        let coordinator = FileCoordinator()
        let sync = try SyncEngine(
            store: store, info: info, device: device, metadata: metadata, cache: cache, coordinator: coordinator,
            activity: handles, invalidations: InvalidationFanout([notifier, ignores]), configuration: configuration, logger: logger
        )
        let controlSocketPath = stateDir + "/control.sock"
        let pictures = thumbnails.map { settings in
            ThumbnailService(engine: sync, metadata: metadata, cache: cache, settings: settings, thumbnailers: thumbnailers, logger: logger)
        }
        let core = FileSystemCore(
            metadata: metadata, cache: cache, coordinator: coordinator, handles: handles, sync: sync,
            notifier: notifier, controlSocketPath: controlSocketPath, logger: logger, accessTimes: accessTimes, ignores: ignores,
            lookers: lookers, thumbnails: pictures
        )
        try StateRecovery.recoverPending(stateDir: stateDir, core: core, logger: logger)
        try core.applyDeviceIgnores()
        // Listening before the engine starts: no content or change goes unheard.
        pictures?.start()
        return DeviceStack(
            metadata: metadata, cache: cache, coordinator: coordinator, handles: handles, notifier: notifier,
            sync: sync, core: core, controlSocketPath: controlSocketPath, thumbnails: pictures
        )
    }

    /// After the last push of a clean stop (`CleanStop`): the state dir's filesystem synced
    /// first (every cache file), so that "clean" means on disk.
    public func markCleanStop() throws {
        let fd = Glibc.open(cache.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(errno: errno, call: "open \(cache.directory)") }
        defer { close(fd) }
        guard syncfs(fd) == 0 else { throw SystemError(errno: errno, call: "syncfs \(cache.directory)") }
        core.flushAccessTimes()
        try CleanStop.mark(metadata)
        cache.removeDurablyDeleted(metadata.isDurable)
    }
}
