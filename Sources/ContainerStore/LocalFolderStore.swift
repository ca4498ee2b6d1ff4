import Glibc
import ItemModel

/// The embedded default store: the container is a folder (`<root>/<container>/`), which
/// may itself live on a shared or synced disk. Put-if-absent is `link(2)` of a fully
/// written and fsynced temp file, which fails with EEXIST if the key exists: atomic on
/// every POSIX filesystem, including NFS.
public struct LocalFolderStore: ContainerStore {
    public let base: String
    public var displayName: String { base }

    public init(root: String, container: String) throws(StoreError) {
        guard ItemName.isValid(ByteString(container)) else {
            throw StoreError(code: .invalidKey, message: "container name '\(container)' is not a valid folder name")
        }
        base = (root.hasSuffix("/") ? String(root.dropLast()) : root) + "/" + container
        do {
            try Syscall.makeDirectories(base + "/.tmp")
        } catch {
            throw StoreError(code: .io, message: "cannot create the store folder \(base)", cause: error)
        }
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        let path = try self.path(key)
        return try await OffloadedWork.run { () throws(StoreError) -> [UInt8] in
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd == -1 {
                let code = errno
                if code == ENOENT || code == ENOTDIR {
                    try checkReachable()
                    throw StoreError(code: .notFound, message: "no object \(key)")
                }
                throw Self.failure("cannot open \(key)", code, "open")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw Self.failure("cannot stat \(key)", errno, "fstat") }
            let size = Int64(info.st_size)
            let lower = min(range?.lowerBound ?? 0, size)
            let upper = min(range?.upperBound ?? size, size)
            do {
                return try Syscall.readFully(fd: fd, count: Int(max(0, upper - lower)), at: lower)
            } catch {
                throw StoreError(code: .io, message: "cannot read \(key)", cause: error)
            }
        }
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        let path = try self.path(key)
        try await OffloadedWork.run { () throws(StoreError) in
            let temp = try writeTemp(bytes, for: key)
            if rename(temp, path) != 0 {
                let code = errno
                unlink(temp)
                throw Self.failure("cannot store \(key)", code, "rename")
            }
            try syncParent(of: path)
        }
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        let path = try self.path(key)
        return try await OffloadedWork.run { () throws(StoreError) -> Bool in
            let temp = try writeTemp(bytes, for: key)
            defer { unlink(temp) }
            if link(temp, path) != 0 {
                let code = errno
                if code == EEXIST { return false }
                throw Self.failure("cannot store \(key)", code, "link")
            }
            try syncParent(of: path)
            return true
        }
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        let path = try self.path(key)
        return try await OffloadedWork.run { () throws(StoreError) -> Bool in
            var info = stat()
            if lstat(path, &info) == 0 { return true }
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                try checkReachable()
                return false
            }
            throw Self.failure("cannot check \(key)", code, "lstat")
        }
    }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await listObjects(prefix: prefix, startAfter: startAfter, limit: limit, sized: false).map(\.key)
    }

    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await listObjects(prefix: prefix, startAfter: startAfter, limit: limit, sized: true)
    }

    /// `sized`: each object's size too (one `fstatat` each).
    private func listObjects(prefix: String, startAfter: String?, limit: Int, sized: Bool) async throws(StoreError) -> [StoredObject] {
        // Prefixes name a folder plus the start of a file name ("journal/" or "blocks/ab").
        let slash = prefix.lastIndex(of: "/")
        let folder = slash.map { String(prefix[..<$0]) } ?? ""
        let namePrefix = slash.map { String(prefix[prefix.index(after: $0)...]) } ?? prefix
        if !folder.isEmpty { _ = try path(folder) }
        let directory = folder.isEmpty ? base : base + "/" + folder
        return try await OffloadedWork.run { () throws(StoreError) -> [StoredObject] in
            guard let dir = opendir(directory) else {
                let code = errno
                if code == ENOENT {
                    try checkReachable()
                    return []
                }
                throw Self.failure("cannot list \(prefix)", code, "opendir")
            }
            defer { closedir(dir) }
            var keys: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name.hasPrefix(".") || !name.hasPrefix(namePrefix) { continue }
                let key = folder.isEmpty ? name : folder + "/" + name
                if let startAfter, key <= startAfter { continue }
                keys.append(key)
            }
            keys.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            return keys.prefix(limit).map { key in
                var info = stat()
                let size: Int64 = sized && fstatat(dirfd(dir), String(key.split(separator: "/").last ?? ""), &info, AT_SYMLINK_NOFOLLOW) == 0 ? Int64(info.st_size) : -1
                return StoredObject(key: key, size: size)
            }
        }
    }

    /// inotify on the prefix's folder (created if missing, so a watch can start before
    /// the first commit).
    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        guard let slash = prefix.lastIndex(of: "/"), let folder = try? path(String(prefix[..<slash])) else { return nil }
        try? Syscall.makeDirectories(folder, mode: 0o755)
        return LocalFolderWatch(directory: folder, onChange: onChange)
    }

    public func delete(_ key: String) async throws(StoreError) {
        let path = try self.path(key)
        try await OffloadedWork.run { () throws(StoreError) in
            if unlink(path) != 0 && errno != ENOENT {
                throw Self.failure("cannot delete \(key)", errno, "unlink")
            }
        }
    }

    /// A missing object means absent only while the container folder is there: a disk
    /// that was unplugged or a network share that dropped is an unreachable store, never
    /// a store whose objects were all deleted.
    private func checkReachable() throws(StoreError) {
        var info = stat()
        guard lstat(base + "/.tmp", &info) == 0 else {
            throw StoreError(code: .unreachable, message: "the store folder \(base) is not there (an unplugged disk or a dropped share?)")
        }
    }

    /// Keys are a few fixed shapes; anything that could climb out of the folder is refused.
    private func path(_ key: String) throws(StoreError) -> String {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !key.isEmpty, !key.hasPrefix("/"), !key.contains("\0"),
              parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".") })
        else {
            throw StoreError(code: .invalidKey, message: "invalid key '\(key)'")
        }
        return base + "/" + key
    }

    private func writeTemp(_ bytes: [UInt8], for key: String) throws(StoreError) -> String {
        let target = try path(key)
        // Never recreate the container inside the empty mountpoint of an unplugged disk.
        try checkReachable()
        if let slash = target.lastIndex(of: "/") {
            do { try Syscall.makeDirectories(String(target[..<slash]), mode: 0o755) } catch {
                throw StoreError(code: .io, message: "cannot create folder for \(key)", cause: error)
            }
        }
        let temp = base + "/.tmp/" + ItemID.random().rawValue
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd != -1 else { throw Self.failure("cannot write \(key)", errno, "open") }
        defer { close(fd) }
        do {
            try Syscall.writeAll(fd: fd, bytes, at: 0)
            try Syscall.check("fsync") { fsync(fd) }
        } catch {
            unlink(temp)
            throw StoreError(code: .io, message: "cannot write \(key)", cause: error)
        }
        return temp
    }

    private func syncParent(of path: String) throws(StoreError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        do { try Syscall.fsyncDirectory(String(path[..<slash])) } catch {
            throw StoreError(code: .io, message: "cannot sync folder of \(path)", cause: error)
        }
    }

    private static func failure(_ message: String, _ code: Int32, _ call: String) -> StoreError {
        let kind: StoreErrorCode = (code == EACCES || code == EPERM || code == EROFS) ? .accessDenied : .io
        return StoreError(code: kind, message: message, cause: SystemError(errno: code, call: call))
    }
}
