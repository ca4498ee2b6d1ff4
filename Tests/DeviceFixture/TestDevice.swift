import CloudFileSystem
import ContainerStore
import ContentCache
import FileCoordinator
import Foundation
import Glibc
import Inodes
import ItemModel
import Logging
import MetadataStore
import SeaweedFSFixture
import SyncEngine
import ThumbnailService

/// One device of a container, without FUSE: the real filesystem core, metadata, cache,
/// coordinator and sync engine in a temporary state dir, driven by path-based helpers.
/// Shared by the core's tests and the sync tests.
public final class TestDevice: Sendable {
    public let name: String
    public let stateDir: String
    public let metadata: MetadataStore
    public let cache: ContentCache
    public let handles: HandleTable
    public let notifier: KernelNotifier
    public let engine: SyncEngine
    public let core: FileSystemCore
    let stack: DeviceStack

    /// `stateDir` reopens an earlier device's state (a restart); by default a new one.
    /// With `manualSync` (the default) the engine syncs only when a test asks; without
    /// it, on the configuration's own poll, debounce and push delay.
    public init(store: any ContainerStore, name: String, stateDir: String? = nil, checkpointInterval: UInt64 = 1000, configuration: SyncConfiguration = SyncConfiguration(), manualSync: Bool = true,
        accessTimes: AccessTimes = AccessTimes(), thumbnails: ThumbnailSettings? = nil
    ) async throws {
        self.name = name
        self.stateDir = try stateDir ?? TemporaryDirectories.make("ubiqfs-dev-\(name)")
        try FileManager.default.createDirectory(atPath: self.stateDir, withIntermediateDirectories: true)
        var configuration = configuration
        if manualSync {
            configuration.pollInterval = .seconds(3600)
            configuration.debounce = .seconds(3600)
            configuration.maxPushDelay = .seconds(3600)
        }
        configuration.checkpointInterval = checkpointInterval
        var logger = Logger(label: "test-\(name)")
        logger.logLevel = ProcessInfo.processInfo.environment["UBIQFS_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
        let stack = try await DeviceStack.open(
            store: store, stateDir: self.stateDir, deviceName: name, configuration: configuration, logger: logger, accessTimes: accessTimes,
            thumbnails: thumbnails
        )
        self.stack = stack
        (metadata, cache, handles, notifier, engine, core) = (stack.metadata, stack.cache, stack.handles, stack.notifier, stack.sync, stack.core)
        await engine.start()
        try await engine.syncNow()
    }

    public static let caller = Caller(uid: getuid(), gid: getgid(), pid: getpid())

    public func sync() async throws { try await engine.syncNow() }

    /// Pictures of files for viewers, when the device was made with `thumbnails`.
    public var thumbnails: ThumbnailService? { stack.thumbnails }

    public func shutdown() async {
        await stack.thumbnails?.stop()
        await engine.shutdown()
        notifier.stop()
    }

    /// A daemon's clean stop: the last push, then what is kept in memory written and the
    /// clean-stop mark.
    public func cleanStop() async throws {
        await shutdown()
        try stack.markCleanStop()
    }

    /// The inode of a path ("a/b/c"), or nil.
    public func inode(_ path: String) -> Inode? {
        var ino = Inode.root
        for part in path.split(separator: "/") {
            guard let child = try? core.lookup(parent: ino, name: Array(part.utf8)) else { return nil }
            ino = child.ino
        }
        return ino
    }

    private func split(_ path: String) -> (parent: Inode, name: [UInt8]) {
        let parts = path.split(separator: "/")
        let parentPath = parts.dropLast().joined(separator: "/")
        return (inode(parentPath) ?? 0, Array(parts.last!.utf8))
    }

    public func mkdir(_ path: String) throws {
        let (parent, name) = split(path)
        _ = try core.mkdir(parent: parent, name: name, mode: 0o755, caller: Self.caller)
    }

    public func write(_ path: String, _ text: String) async throws {
        try await write(path, Array(text.utf8))
    }

    public func write(_ path: String, _ bytes: [UInt8]) async throws {
        let handle: UInt64
        if let ino = inode(path) {
            handle = try await open(ino, flags: O_WRONLY | O_TRUNC)
        } else {
            let (parent, name) = split(path)
            handle = try core.create(parent: parent, name: name, mode: 0o644, flags: O_WRONLY, caller: Self.caller).1
        }
        _ = try bytes.withUnsafeBytes { try core.write(handle: handle, data: $0, offset: 0) }
        core.release(handle: handle)
    }

    public func open(_ ino: Inode, flags: Int32) async throws -> UInt64 {
        try await core.open(ino, flags: flags).handle
    }

    public func read(_ path: String) async throws -> String {
        String(decoding: try await readBytes(path), as: UTF8.self)
    }

    public func readBytes(_ path: String) async throws -> [UInt8] {
        guard let ino = inode(path) else { throw FileSystemError(.notFound, path) }
        let handle = try await open(ino, flags: O_RDONLY)
        defer { core.release(handle: handle) }
        let size = try core.attributes(ino).size
        return try await core.read(handle: handle, size: Int(size) + 10, offset: 0)
    }

    /// Waits until a file read through is local: the last fetched blocks are made durable
    /// and the file completed in the background. False if it is not within 10 s.
    @discardableResult
    public func waitUntilLocal(_ path: String) async throws -> Bool {
        guard let ino = inode(path) else { throw FileSystemError(.notFound, path) }
        for _ in 0..<1000 {
            if try await metadata.read({ db in try ItemRow.find(ino: ino, db) })?.contentState == .local { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    public func remove(_ path: String) throws {
        let (parent, name) = split(path)
        try core.unlink(parent: parent, name: name, directory: (try? core.attributes(inode(path) ?? 0).kind) == .directory)
    }

    /// `ln from to`: another name for the item at `from`.
    @discardableResult
    public func link(_ from: String, _ to: String) throws -> ItemAttributes {
        guard let ino = inode(from) else { throw FileSystemError(.notFound, from) }
        let (newParent, newName) = split(to)
        return try core.link(ino, newParent: newParent, newName: newName)
    }

    public func rename(_ from: String, _ to: String) throws {
        let (parent, name) = split(from)
        let (newParent, newName) = split(to)
        try core.rename(parent: parent, name: name, newParent: newParent, newName: newName, exchange: false, noReplace: false)
    }

    /// Every path in the tree with its content (files) or "/" (folders), sorted.
    public func tree() async throws -> [String: String] {
        var result: [String: String] = [:]
        func walk(_ ino: Inode, _ prefix: String) async throws {
            for entry in try core.list(ino, after: 2, limit: 100_000) {
                let path = prefix + String(decoding: entry.name, as: UTF8.self)
                switch entry.attributes.kind {
                case .directory:
                    result[path] = "/"
                    try await walk(entry.attributes.ino, path + "/")
                case .file: result[path] = try await read(path)
                case .symlink: result[path] = "-> " + String(decoding: try core.readlink(entry.attributes.ino), as: UTF8.self)
                case .fifo, .socket, .characterDevice, .blockDevice:
                    result[path] = "\(entry.attributes.kind.rawValue) \(entry.attributes.rdev)"
                // Never: a name shows its item (a test that meets this fails on the tree).
                case .link: result[path] = "(a link row)"
                }
            }
        }
        try await walk(Inode.root, "")
        return result
    }
}
