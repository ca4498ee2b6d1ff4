import ContentCache
import Foundation
import Glibc
import GRDB
import IgnoreRules
import Inodes
import ItemModel
import Logging
import MetadataStore
import SyncEngine
import Synchronization

/// The ignore rules of this device's tree as creates and moves need them: each folder's
/// path and `.ubiqfsignore`, found once and kept until names change (`forget`). A leaf
/// lock: nothing else is taken while it is held, and the database is read outside it.
public final class IgnoreIndex: InvalidationSink {
    private struct State {
        var rules: IgnoreRules
        /// Folders whose path is known, and whether their own list was read.
        var folders: [Inode: (path: [UInt8], listRead: Bool)] = [:]
        /// Bumped by `forget`: what was found before it is not kept.
        var generation = 0
    }

    /// A `.ubiqfsignore` larger than this is read only so far.
    static let maxFileSize = 1 << 20

    private let state: Mutex<State>
    private let cache: ContentCache
    private let logger: Logger
    /// The `.ubiqfsignore` files met (their inodes): a pull that changes one, or the
    /// download of one, changes the rules.
    private let ruleFiles = Mutex<Set<Inode>>([])
    /// Told of folders whose rules a pull may have changed (names) and of rule files whose
    /// content changed or arrived; set once by the filesystem.
    private let listener = Mutex<(@Sendable (_ folders: [Inode], _ files: [Inode]) -> Void)?>(nil)

    init(device: IgnoreList, cache: ContentCache, logger: Logger) {
        self.state = Mutex(State(rules: IgnoreRules(device: device)))
        self.cache = cache
        self.logger = logger
    }

    /// This device's own list.
    var device: IgnoreList { state.withLock { $0.rules.device } }

    /// Names or rule files changed: paths and lists are found again.
    func forget() {
        state.withLock { state in
            state.folders = [:]
            state.rules = IgnoreRules(device: state.rules.device)
            state.generation += 1
        }
    }

    func listen(_ body: @escaping @Sendable (_ folders: [Inode], _ files: [Inode]) -> Void) {
        listener.withLock { $0 = body }
    }

    /// Remembers a rule file, whose changes and download are then told.
    func noteRuleFile(_ ino: Inode) {
        _ = ruleFiles.withLock { $0.insert(ino) }
    }

    /// A pull changed names or content here, or a download completed: a name
    /// `.ubiqfsignore` that changed, or a rule file changed, is told.
    public func invalidate(_ invalidations: [KernelInvalidation]) {
        var folders: [Inode] = []
        var files: [Inode] = []
        let known = ruleFiles.withLock { $0 }
        for invalidation in invalidations {
            switch invalidation {
            case .entry(let parent, let name) where name == Array(IgnoreRules.fileName.utf8): folders.append(parent)
            case .inode(let ino, _) where known.contains(ino): files.append(ino)
            default: break
            }
        }
        if invalidations.contains(where: { if case .entry = $0 { true } else if case .inode(_, true) = $0 { true } else { false } }) {
            forget()
        }
        guard !folders.isEmpty || !files.isEmpty, let listener = listener.withLock({ $0 }) else { return }
        listener(folders, files)
    }

    /// Why the item `name` in `folder` (a live, not ignored folder) is ignored by a rule.
    func reason(for name: ByteString, isDirectory: Bool, in folder: ItemRow, _ db: Database) throws -> IgnoreRules.Reason? {
        let path = try folderPath(folder, db)
        let itemPath = path.isEmpty ? name.bytes : path + [UInt8(ascii: "/")] + name.bytes
        return state.withLock { $0.rules.ownReason(for: itemPath, isDirectory: isDirectory) }
    }

    /// The folder's path from the top, each folder on the way known with its list read.
    func folderPath(_ folder: ItemRow, _ db: Database) throws -> [UInt8] {
        let (known, generation) = state.withLock { ($0.folders[folder.inode], $0.generation) }
        if let known, known.listRead { return known.path }
        var chain: [ItemRow] = []
        var current: ItemRow? = folder
        var base: [UInt8]?
        while let row = current {
            if row.inode == Inode.root {
                chain.append(row)
                base = nil
                break
            }
            if let known = state.withLock({ $0.folders[row.inode] }), known.listRead {
                base = known.path
                break
            }
            chain.append(row)
            current = try row.parent.flatMap { try ItemRow.find(ino: $0, db) }
        }
        var path = base ?? []
        var found: [(Inode, [UInt8], IgnoreList?)] = []
        for row in chain.reversed() {
            if row.inode != Inode.root { path = path.isEmpty ? row.itemName.bytes : path + [UInt8(ascii: "/")] + row.itemName.bytes }
            found.append((row.inode, path, try list(in: row, path: path, db)))
        }
        state.withLock { state in
            guard state.generation == generation else { return }
            for (ino, path, list) in found {
                state.folders[ino] = (path, true)
                if let list { state.rules.set(list) }
            }
        }
        return path
    }

    /// The patterns of the folder's `.ubiqfsignore`, if it has one whose content is here.
    private func list(in folder: ItemRow, path: [UInt8], _ db: Database) throws -> IgnoreList? {
        guard let file = try ItemRow.child(of: folder.inode, named: ByteString(Array(IgnoreRules.fileName.utf8)), db),
              let item = try ItemRow.resolved(file, db), item.itemKind == .file else { return nil }
        noteRuleFile(item.inode)
        // Not here yet: its rules apply once it is (`FileSystemCore.remoteRulesChanged`).
        guard item.contentState == .local else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try Self.readStart(of: cache.path(for: item.inode))
        } catch {
            // The rules are not known; what is created meanwhile syncs (and can be ignored later).
            logger.error("cannot read the ignore rules of \(String(decoding: path, as: UTF8.self))/: \(error)")
            return nil
        }
        let source = path.isEmpty ? IgnoreRules.fileName : String(decoding: path, as: UTF8.self) + "/" + IgnoreRules.fileName
        return IgnoreList(folder: path, source: source, contents: bytes)
    }

    /// The first `maxFileSize` bytes of a file.
    private static func readStart(of path: String) throws(SystemError) -> [UInt8] {
        let fd = try Syscall.check("open") { Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SystemError(errno: errno, call: "fstat") }
        let limit = min(Int(info.st_size), maxFileSize)
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let read = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, limit - count) }
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else { throw SystemError(errno: errno, call: "read") }
            if read == 0 { break }
            count += read
        }
        return Array(bytes[..<count])
    }
}
