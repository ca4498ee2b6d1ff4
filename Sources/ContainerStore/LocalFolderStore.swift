import Glibc
import ItemModel

/// The embedded default store: the container is a folder (`<root>/<container>/`), which
/// may itself live on a shared or synced disk. Put-if-absent is `link(2)` of a fully
/// written and fsynced temp file, which fails with EEXIST if the key exists: atomic on
/// every POSIX filesystem, including NFS.
public struct LocalFolderStore: ContainerStore {
    public let base: String
    private let folder: StoreFolder
    public var displayName: String { base }

    public init(root: String, container: String) throws(StoreError) {
        guard ItemName.isValid(ByteString(container)) else {
            throw StoreError(code: .invalidKey, message: "container name '\(container)' is not a valid folder name")
        }
        base = (root.hasSuffix("/") ? String(root.dropLast()) : root) + "/" + container
        folder = StoreFolder(base: base)
        do {
            try Syscall.makeDirectories(base + "/.tmp")
        } catch {
            throw StoreError(code: .io, message: "cannot create the store folder \(base)", cause: error)
        }
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        try checkKey(key)
        return try await OffloadedWork.run { () throws(StoreError) -> [UInt8] in
            guard let place = try folder.place(of: key, create: false), let fd = try folder.openObject(place, key: key) else {
                try checkReachable()
                throw StoreError(code: .notFound, message: "no object \(key)")
            }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0 else { throw Self.failure("cannot stat \(key)", errno, "fstat") }
            let size = Int64(info.st_size)
            if range == nil { try Self.checkSize(size, of: key) }
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
        try checkKey(key)
        try await OffloadedWork.run { () throws(StoreError) in
            let (temp, place) = try writeTemp(bytes, for: key)
            if temp.rename(to: place) != 0 {
                let code = errno
                _ = temp.unlink()
                throw Self.failure("cannot store \(key)", code, "renameat")
            }
            try sync(place, of: key)
        }
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try checkKey(key)
        return try await OffloadedWork.run { () throws(StoreError) -> Bool in
            let (temp, place) = try writeTemp(bytes, for: key)
            defer { _ = temp.unlink() }
            if temp.link(to: place) != 0 {
                let code = errno
                if code == EEXIST { return false }
                throw Self.failure("cannot store \(key)", code, "linkat")
            }
            try sync(place, of: key)
            return true
        }
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool {
        try checkKey(key)
        return try await OffloadedWork.run { () throws(StoreError) -> Bool in
            var info = stat()
            if let place = try folder.place(of: key, create: false) {
                // Only an object counts: a block whose key holds a FIFO or a link is put again.
                if place.status(&info) == 0 { return info.st_mode & S_IFMT == S_IFREG }
                guard errno == ENOENT else { throw Self.failure("cannot check \(key)", errno, "fstatat") }
            }
            try checkReachable()
            return false
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
        let relative = slash.map { String(prefix[..<$0]) } ?? ""
        let namePrefix = slash.map { String(prefix[prefix.index(after: $0)...]) } ?? prefix
        if !relative.isEmpty { try checkKey(relative) }
        return try await OffloadedWork.run { () throws(StoreError) -> [StoredObject] in
            guard let fd = try folder.openFolder(relative, for: "the listing of \(prefix)") else {
                try checkReachable()
                return []
            }
            guard let dir = fdopendir(fd) else {
                let code = errno
                close(fd)
                throw Self.failure("cannot list \(prefix)", code, "fdopendir")
            }
            defer { closedir(dir) }
            var keys: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                if name.hasPrefix(".") || !name.hasPrefix(namePrefix) { continue }
                let key = relative.isEmpty ? name : relative + "/" + name
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
    /// the first commit); never through a symlink.
    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        guard let slash = prefix.lastIndex(of: "/") else { return nil }
        let relative = String(prefix[..<slash])
        guard (try? checkKey(relative)) != nil, (try? folder.place(of: relative + "/watched", create: true)) != nil else { return nil }
        return LocalFolderWatch(directory: base + "/" + relative, onChange: onChange)
    }

    public func delete(_ key: String) async throws(StoreError) {
        try checkKey(key)
        try await OffloadedWork.run { () throws(StoreError) in
            guard let place = try folder.place(of: key, create: false) else { return }
            if place.unlink() != 0 && errno != ENOENT {
                throw Self.failure("cannot delete \(key)", errno, "unlinkat")
            }
        }
    }

    /// A missing object means absent only while the container folder is there: a disk
    /// that was unplugged or a network share that dropped is an unreachable store, never
    /// a store whose objects were all deleted.
    private func checkReachable() throws(StoreError) {
        var info = stat()
        guard lstat(base + "/.tmp", &info) == 0 else {
            throw StoreFolder.unreachable(base)
        }
    }

    /// Keys are a few fixed shapes; anything that could climb out of the folder is refused.
    private func checkKey(_ key: String) throws(StoreError) {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !key.isEmpty, !key.hasPrefix("/"), !key.contains("\0"),
              parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".") })
        else {
            throw StoreError(code: .invalidKey, message: "invalid key '\(key)'")
        }
    }

    /// The object's bytes, fsynced in a new file of `.tmp/`, and the place of `key`
    /// (its folder made if missing), both beneath the container folder.
    private func writeTemp(_ bytes: [UInt8], for key: String) throws(StoreError) -> (temp: StoreFolder.Place, place: StoreFolder.Place) {
        // Never recreate the container inside the empty mountpoint of an unplugged disk.
        try checkReachable()
        guard let place = try folder.place(of: key, create: true),
              let temp = try folder.place(of: ".tmp/" + ItemID.random().rawValue, create: false)
        else {
            throw StoreFolder.unreachable(base)
        }
        let fd = temp.open(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd != -1 else { throw Self.failure("cannot write \(key)", errno, "openat") }
        defer { close(fd) }
        do {
            try Syscall.writeAll(fd: fd, bytes, at: 0)
            try Syscall.check("fsync") { fsync(fd) }
        } catch {
            _ = temp.unlink()
            throw StoreError(code: .io, message: "cannot write \(key)", cause: error)
        }
        return (temp, place)
    }

    private func sync(_ place: StoreFolder.Place, of key: String) throws(StoreError) {
        if place.syncFolder() != 0 { throw Self.failure("cannot sync the folder of \(key)", errno, "fsync") }
    }

    /// Before reading: never gigabytes into memory for an object that will be refused.
    static func checkSize(_ size: Int64, of key: String) throws(StoreError) {
        let largest = ContainerLayout.largestObject(atKey: key)
        guard size <= largest else {
            throw StoreError(code: .corrupt, message: "\(key) is \(size) bytes, more than the \(largest) an object there may have; refused as damaged, not read")
        }
    }

    private static func failure(_ message: String, _ code: Int32, _ call: String) -> StoreError {
        StoreFolder.failure(code, message, call: call)
    }
}
