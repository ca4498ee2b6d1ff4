import ContentCache
import Foundation
import Glibc
import Inodes
import ItemModel
import Logging
import MetadataStore

/// A damaged state database is never trusted and never deleted. At startup
/// `PRAGMA quick_check` runs first; on damage the database and the whole cache are moved
/// to `quarantine/<time>/` (the cache too: its files are named by the old inode numbers,
/// which a new database would reuse), the device rebuilds from the store like a new one,
/// and every cache file the store may not have is copied into the mount, under
/// `ubiqfs recovered <time>/` at its old path. A `pending` marker makes the copy resume
/// after a crash or an unreachable store; files already copied are not copied twice.
public enum StateRecovery {
    static let databaseName = "state.db"
    static let pendingMarker = "pending"

    /// Moves a damaged database and its cache aside. Returns where, or nil when healthy.
    @discardableResult
    public static func quarantineIfDamaged(stateDir: String, logger: Logger) throws -> String? {
        let database = stateDir + "/" + databaseName
        guard case .damaged(let reason) = try DatabaseHealth.check(path: database) else { return nil }
        let stamp = Self.stamp(Date())
        let folder = stateDir + "/quarantine/" + stamp
        try Syscall.makeDirectories(folder, mode: 0o700)
        for name in [databaseName, databaseName + "-wal", databaseName + "-shm", "cache"] where access(stateDir + "/" + name, F_OK) == 0 {
            try Syscall.check("rename") { rename(stateDir + "/" + name, folder + "/" + name) }
        }
        let marker = Glibc.open(folder + "/" + pendingMarker, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if marker >= 0 { fsync(marker); close(marker) }
        try Syscall.fsyncDirectory(folder)
        try Syscall.fsyncDirectory(stateDir)
        logger.critical("the state database was damaged (\(reason)); it and the cache were moved to \(folder), and this device is rebuilt from the store; content not yet uploaded will be in 'ubiqfs recovered \(stamp)' at the top of the mount")
        return folder
    }

    /// Copies the unsynced content of every pending quarantine into the tree; returns the
    /// paths (in the mount) of the files it wrote.
    @discardableResult
    public static func recoverPending(stateDir: String, core: FileSystemCore, logger: Logger) throws -> [String] {
        let root = stateDir + "/quarantine"
        let folders = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
        var recovered: [String] = []
        for stamp in folders where access(root + "/" + stamp + "/" + pendingMarker, F_OK) == 0 {
            let folder = root + "/" + stamp
            recovered += try recover(folder: folder, into: "ubiqfs recovered " + stamp, core: core, logger: logger)
            unlink(folder + "/" + pendingMarker)
            logger.notice("recovery from \(folder) is complete; that folder can be deleted once the recovered files are checked")
        }
        return recovered
    }

    private static func recover(folder: String, into topName: String, core: FileSystemCore, logger: Logger) throws -> [String] {
        let salvaged = Dictionary(SalvagedItem.salvage(path: folder + "/" + databaseName).map { ($0.ino, $0) }, uniquingKeysWith: { first, _ in first })
        let cached = ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/cache")) ?? []).compactMap { UInt64($0).map(Inode.init(rawValue:)) }.sorted()
        var written: [String] = []
        for ino in cached {
            let item = salvaged[ino]
            // Uploaded content is in the store, deleted content was deleted on purpose.
            if let item, !item.unsynced || item.deleted { continue }
            let path = item.map { Self.path(of: $0, in: salvaged) } ?? [Array("unknown item \(ino)".utf8)]
            let mode = (item?.mode ?? 0o644) & 0o777
            try copy(folder + "/cache/" + ino.description, to: [Array(topName.utf8)] + path, mode: mode, core: core)
            let shown = ([topName] + path.map { String(decoding: $0, as: UTF8.self) }).joined(separator: "/")
            logger.warning("recovered unsynced content: \(shown)")
            written.append(shown)
        }
        return written
    }

    /// The item's old path as name components; a broken chain keeps what it has under
    /// a name that says so.
    private static func path(of item: SalvagedItem, in items: [Inode: SalvagedItem]) -> [[UInt8]] {
        var parts = [item.name.isEmpty ? Array("unnamed item \(item.ino)".utf8) : item.name]
        var parent = item.parent
        while let ino = parent, ino != Inode.root, parts.count < 256 {
            guard let above = items[ino], !above.name.isEmpty else {
                parts.append(Array("unknown folder \(ino)".utf8))
                break
            }
            parts.append(above.name)
            parent = above.parent
        }
        return parts.reversed()
    }

    private static func copy(_ source: String, to path: [[UInt8]], mode: UInt32, core: FileSystemCore) throws {
        let caller = Caller(uid: getuid(), gid: getgid(), pid: getpid())
        var parent = Inode.root
        for name in path.dropLast() {
            if let existing = try? core.lookup(parent: parent, name: name) {
                parent = existing.ino
            } else {
                parent = try core.mkdir(parent: parent, name: name, mode: 0o700, caller: caller).ino
            }
        }
        let input = Glibc.open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard input >= 0 else { throw SystemError(errno: errno, call: "open \(source)") }
        defer { close(input) }
        var info = stat()
        fstat(input, &info)
        let name = path.last!
        // Resuming: a file already copied whole is not copied again.
        if let existing = try? core.lookup(parent: parent, name: name), existing.size == Int64(info.st_size) { return }
        if (try? core.lookup(parent: parent, name: name)) != nil { try core.unlink(parent: parent, name: name, directory: false) }
        let handle = try core.create(parent: parent, name: name, mode: mode | 0o600, flags: O_WRONLY, caller: caller).1
        defer { core.release(handle: handle) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, $0.count, off_t(offset)) }
            guard count >= 0 else { throw SystemError(errno: errno, call: "read \(source)") }
            if count == 0 { break }
            _ = try buffer.withUnsafeBytes { raw throws(FileSystemError) in
                try core.write(handle: handle, data: UnsafeRawBufferPointer(rebasing: raw[0..<count]), offset: offset)
            }
            offset += Int64(count)
        }
        try core.fsync(handle: handle)
    }

    private static func stamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone.current
        formatter.dateFormat = "yyyy-MM-dd HHmmss"
        return formatter.string(from: date)
    }
}
