import CloudFileSystem
import ContainerStore
import FileCoordinator
import Foundation
import FuseKit
import Glibc
import Logging
import MetricsHTTP
import S3Store
import SyncEngine

/// The mounted container: builds every part, mounts, serves until unmounted, then stops
/// sync after pushing what is pending. Runs on the main thread (libfuse's loop blocks it).
final class Daemon {
    let options: MountOptions
    /// An encrypted container's passphrase, if the mount brought one (foreground).
    let passphrase: String?
    /// In the state dir after a stop: how many items the last push left for the next mount.
    static let unmountResult = "unmount-result"

    init(options: MountOptions, passphrase: String? = nil) {
        self.options = options
        self.passphrase = passphrase
    }

    /// Returns the exit status. Failures before the mount is ready are reported as one line
    /// on the ready pipe (or stderr in the foreground).
    func run() -> Int32 {
        let level = Logger.Level(rawValue: options.resolvedLogLevel) ?? .info
        let journal = ServiceManager.stderrIsJournal
        LoggingSystem.bootstrap { label in
            if journal { return JournalLogHandler(logLevel: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "ubiqfs")
        signal(SIGPIPE, SIG_IGN)
        do {
            let mount = try prepare(logger: logger)
            // Mounted: `/healthz` answers for it from the moment `ubiqfs mount` returns.
            mount.health.setServing(true)
            report("ok")
            ServiceManager.notify("READY=1\nSTATUS=mounted \(options.resolvedMountpoint)")
            logger.info("mounted \(options.resolvedMountpoint) (store \(options.resolvedStore), container \(options.resolvedContainer))")
            do {
                try mount.session.run(maxThreads: 16)
            } catch {
                logger.error("the FUSE loop failed: \(error)")
            }
            mount.health.setServing(false)
            // A second Ctrl-C or SIGTERM (systemd's stop, a user's) must not cut the last push
            // short; it is bounded, and SIGKILL still works.
            signal(SIGTERM, SIG_IGN)
            signal(SIGINT, SIG_IGN)
            logger.info("unmounting; pushing pending changes")
            ServiceManager.notify("STOPPING=1\nSTATUS=pushing pending changes")
            // Left in place until the next daemon has the lock (it removes it then): a mount
            // that waits for this push never sees the lock held with no marker.
            if let failure = StateDirLock.markStopping(options.resolvedStateDir) {
                logger.error("cannot mark the state dir as stopping: \(failure); a mount of it before this push ends fails")
            }
            mount.control.stop()
            mount.budget.stop()
            mount.desktop?.stop(conflicts: mount.sync.conflictListener)
            // Unmounted first, so no program waits on a mount nobody serves during the last push.
            mount.session.unmount()
            mount.notifier.stop()
            mount.handles.closeAll()
            let pending: Int
            do { pending = try Blocking.wait { await mount.stack.thumbnails?.stop(); return await mount.sync.shutdown() } } catch {
                logger.error("the last push failed: \(error)")
                pending = 0
            }
            // For `ubiqfs unmount`, which waits for this process and tells the terminal.
            do {
                try String(pending).write(toFile: options.resolvedStateDir + "/" + Self.unmountResult, atomically: true, encoding: .utf8)
            } catch {
                logger.error("cannot write \(Self.unmountResult): \(error)")
            }
            if pending > 0 { logger.notice("\(pending) items still to push; they are pushed after the next mount") }
            do { try mount.stack.markCleanStop() } catch {
                logger.error("cannot mark the stop as clean (the next start checks the cache as after a crash): \(error)")
            }
            mount.metrics?.stop()
            logger.info("stopped")
            return 0
        } catch {
            let line = "\(error)"
            logger.error("\(line)")
            report(line)
            return 1
        }
    }

    private func report(_ line: String) {
        guard let fd = options.readyFd else {
            if line != "ok" { FileHandle.standardError.write(Data("ubiqfs: \(line)\n".utf8)) }
            return
        }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    struct Mounted {
        var session: FuseSession
        var sync: SyncEngine
        var stack: DeviceStack
        var notifier: KernelNotifier
        var handles: HandleTable
        var control: ControlServer
        var budget: CacheBudget
        var desktop: DesktopNotifier?
        var health: MountHealth
        /// Serves `--metrics` until the last push is over (`/healthz` says so meanwhile).
        var metrics: MetricsServer?
        var lock: Int32
    }

    private func prepare(logger: Logger) throws -> Mounted {
        let mountpoint = options.resolvedMountpoint
        try checkMountpoint(mountpoint)
        let stateDir = options.resolvedStateDir
        let localStore = S3Location.isS3(options.resolvedStore) ? [] : [("store", options.resolvedStore)]
        for (what, path) in [("state dir", stateDir)] + localStore where path == mountpoint || path.hasPrefix(mountpoint + "/") {
            throw CommandFailure("the \(what) \(path) cannot be inside the mountpoint \(mountpoint)")
        }
        try StateDirSafety.prepare(stateDir)
        let outcome = StateDirLock.takeWaiting(stateDir) {
            logger.notice("waiting for the previous daemon of \(stateDir) to finish its last push")
        }
        guard case .taken(let lock) = outcome else {
            throw CommandFailure("another ubiqfs daemon is using the state dir \(stateDir)")
        }
        // Left by a daemon killed during its last push: nobody is stopping now.
        unlink(stateDir + "/" + StateDirLock.stopping)
        let store = try StoreOpener.open(
            options.resolvedStore, container: options.resolvedContainer, faults: options.storeFaults,
            allowPlainHTTP: options.allowPlainHTTP, warn: { logger.warning("\($0)") })
        var configuration = SyncConfiguration()
        if let seconds = options.storeTimeout, seconds > 0 { configuration.storeTimeout = .milliseconds(Int(seconds * 1000)) }
        try StoreOpener.verify(store, stateDir: stateDir, timeout: configuration.storeTimeout)
        if let poll = options.pollInterval { configuration.pollInterval = .milliseconds(Int(poll * 1000)) }
        configuration.readOnly = options.readOnly
        configuration.encryption = ContainerUnlock(passphrase: passphrase ?? options.passphraseFd.flatMap(Passphrase.read(fd:)), encrypt: options.encrypt)
        if let transfers = options.transfers { configuration.transfers = transfers }
        if let limit = options.bwlimit.flatMap(BandwidthLimit.init(parsing:)) {
            (configuration.uploadBytesPerSecond, configuration.downloadBytesPerSecond) = (limit.upload, limit.download)
        }
        if let interval = options.checkpointInterval, interval > 0 { configuration.checkpointInterval = interval }
        if options.keepVersions != nil {
            logger.warning("--keep-versions is deprecated and ignored: retention is the container's now, the same on every device (`ubiqfs retention MOUNTPOINT --versions DAYS`)")
        }
        let deviceName = options.resolvedDevice
        let rule = try options.atime.map { value throws -> AccessTimes.Rule in
            guard let rule = AccessTimes.Rule(rawValue: value) else { throw CommandFailure("--atime \(value): expected relatime, strictatime or noatime") }
            return rule
        } ?? .relatime
        // A read-only mount writes nothing, access times included.
        let accessTimes = AccessTimes(rule: options.readOnly ? .noatime : rule, folders: !options.noDirAtime)
        let deviceIgnores = try Self.deviceIgnores(options.ignoreFile)
        let (lookers, thumbnails) = try thumbnailSettings(mountpoint: mountpoint)
        // Counted above the fault injection: what the engine meets is what the metrics say.
        let measured = MeasuredStore(store)
        let stack = try Blocking.wait { [configuration, measured] in
            try await DeviceStack.open(
                store: measured, stateDir: stateDir, deviceName: deviceName, configuration: configuration, logger: logger, accessTimes: accessTimes,
                deviceIgnores: deviceIgnores, lookers: lookers, thumbnails: thumbnails
            )
        }
        let (sync, core, coordinator) = (stack.sync, stack.core, stack.coordinator)
        let limit = options.cacheSize.flatMap(ByteSize.parse) ?? CacheBudget.defaultLimit(cacheDirectory: stack.cache.directory)
        let environment = ProcessInfo.processInfo.environment
        let desktop = options.noNotify ? nil : DesktopNotifier(settings: .init(environment: environment), environment: environment, logger: logger)
        let recentEvictions: (@Sendable ([String]) -> Void)? = if let desktop { { desktop.evictedRecentlyUsed($0) } } else { nil }
        let budget = CacheBudget(core: core, limit: limit, logger: logger, recentEvictions: recentEvictions)
        // The tree first, so a new device shows every item as soon as the mount is there;
        // what is pending from the last run is pushed once the mount is up, however large.
        Task { await sync.start() }
        do {
            try Blocking.wait { try await sync.pullNow() }
            // Ignored items kept through a reset go back among the container's items.
            try KeptIgnoredItems.restore(stateDir: stateDir, core: core, logger: logger)
        } catch {
            logger.warning("first sync failed; working offline until the store is back (ignored items kept through a reset are put back after a pull at the next mount): \(error)")
        }
        sync.localChange()

        let adapter = FuseAdapter(core: core, inodeGeneration: try stack.metadata.inodeGeneration(), logger: logger)
        // default_permissions always: the kernel checks modes and owners, so the daemon
        // never has to. allow_other only when asked: a mount is private to its user otherwise.
        let mountOptions = "default_permissions" + (options.allowOther ? ",allow_other" : "") + (options.noexec ? ",noexec" : "") + (options.readOnly ? ",ro" : "") + ",fsname=ubiqfs:\(options.resolvedContainer)" + (options.plainFuseType ? "" : ",subtype=ubiqfs")
        let timings = FuseRequestTimings()
        let health = MountHealth(store: measured, timings: timings)
        let metrics = try options.metrics.map { text throws -> MetricsServer in
            let exporter = MetricsExporter(
                mountpoint: mountpoint, sync: sync, core: core, metadata: stack.metadata, cacheDirectory: stack.cache.directory,
                budget: budget, store: measured, timings: timings, health: health, logger: logger)
            do {
                return try MetricsServer(MetricsAddress(parsing: text)) { await exporter.respond($0) }
            } catch let error as MetricsServer.Failure {
                throw CommandFailure(error.description)
            } catch {
                throw CommandFailure("--metrics \(error)")
            }
        }
        if let metrics, let text = options.metrics { logger.info("metrics on http://\((try? MetricsAddress(parsing: text).host) ?? text):\(metrics.boundPort)/metrics") }
        // Kernel requests are timed only for the metrics (what the benchmark compares).
        let session = try FuseSession(operations: adapter, arguments: ["ubiqfs", "-o", mountOptions], observer: metrics == nil ? nil : timings)
        try session.mount(at: mountpoint)
        stack.notifier.connect { [weak session] invalidation in
            guard let session else { return }
            switch invalidation {
            case .inode(let ino, let data):
                _ = session.invalidateInode(ino, offset: data ? 0 : -1, length: 0)
            case .entry(let parent, let name):
                _ = session.invalidateEntry(parent: parent, name: name)
            }
        }
        let exitHandle = SessionExit(session)
        let control = try ControlServer(path: stack.controlSocketPath, feed: sync.feed) { request in
            await ControlHandler(
                sync: sync, core: core, budget: budget, coordinator: coordinator, store: store, kernelRequests: adapter.requestCounts,
                mountpoint: mountpoint, stateDir: stateDir
            ) { exitHandle.request() }.handle(request)
        }
        control.start()
        budget.start()
        desktop?.start(conflicts: sync.conflictListener) { sync.storeIsOnline }
        return Mounted(
            session: session, sync: sync, stack: stack, notifier: stack.notifier, handles: stack.handles, control: control, budget: budget, desktop: desktop,
            health: health, metrics: metrics, lock: lock
        )
    }

    /// Lets the control server end the loop without keeping the session alive.
    private final class SessionExit: Sendable {
        weak let session: FuseSession?
        init(_ session: FuseSession) { self.session = session }
        func request() { session?.requestExit() }
    }

    private func checkMountpoint(_ path: String) throws {
        var info = stat()
        if stat(path, &info) != 0 {
            if errno == ENOTCONN {
                throw CommandFailure("\(path) is a dead mount (its daemon was killed); run `fusermount3 -uz \(path)` first")
            }
            throw CommandFailure("the mountpoint \(path) does not exist")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw CommandFailure("the mountpoint \(path) is not a folder") }
        if let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) {
            for line in mounts.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 4, Self.unescape(String(fields[4])) == path {
                    throw CommandFailure("\(path) is already mounted")
                }
            }
        }
    }

    /// /proc/self/mountinfo escapes spaces and some bytes as \ooo.
    private static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        let raw = Array(field.utf8)
        var index = 0
        while index < raw.count {
            if raw[index] == 92, index + 3 < raw.count, let value = UInt8(String(decoding: raw[(index + 1)...(index + 3)], as: UTF8.self), radix: 8) {
                bytes.append(value)
                index += 4
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
