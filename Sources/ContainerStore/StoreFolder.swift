import Glibc
import ItemModel

/// The container folder of a `LocalFolderStore`, which other people may be able to write
/// (a shared folder, a synced disk): every path is walked one checked component at a
/// time from it (`openat` with `O_NOFOLLOW`, never "." or ".."), so through no symlink
/// and never out of it; and only regular files are objects. A symlink, FIFO, device or folder where an object or a folder of objects
/// should be is a damaged object (`corrupt`), never followed and never opened in a way
/// that could block. The folder's own path is the user's, resolved as given.
struct StoreFolder: Sendable {
    let base: String

    /// An open folder of the store and the last component of a key in it. Its calls are
    /// methods, so the folder's descriptor is open for as long as each one runs.
    final class Place {
        let folder: Int32
        let leaf: String

        init(folder: Int32, leaf: String) {
            self.folder = folder
            self.leaf = leaf
        }

        deinit { close(folder) }

        func status(_ info: inout stat) -> Int32 { fstatat(folder, leaf, &info, AT_SYMLINK_NOFOLLOW) }
        func open(_ flags: Int32, _ mode: mode_t = 0) -> Int32 { openat(folder, leaf, flags, mode) }
        func unlink() -> Int32 { unlinkat(folder, leaf, 0) }
        func rename(to other: Place) -> Int32 { renameat(folder, leaf, other.folder, other.leaf) }
        func link(to other: Place) -> Int32 { linkat(folder, leaf, other.folder, other.leaf, 0) }
        func syncFolder() -> Int32 { fsync(folder) }
    }

    /// The folder that holds `key` (a path of plain components, checked by the caller),
    /// made if missing when `create`. nil when it is missing and not made.
    func place(of key: String, create: Bool) throws(StoreError) -> Place? {
        var parts = key.split(separator: "/").map(String.init)
        let leaf = parts.removeLast()
        guard let folder = try openFolder(parts, create: create, for: key) else { return nil }
        return Place(folder: folder, leaf: leaf)
    }

    /// The folder `relative` ("" for the container folder itself), for reading.
    func openFolder(_ relative: String, for what: String) throws(StoreError) -> Int32? {
        try openFolder(relative.split(separator: "/").map(String.init), create: false, for: what)
    }

    private func openFolder(_ parts: [String], create: Bool, for what: String) throws(StoreError) -> Int32? {
        var current = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard current >= 0 else {
            let code = errno
            // An unplugged disk or a dropped share: never "no such object".
            if code == ENOENT || code == ENOTDIR {
                throw Self.unreachable(base)
            }
            throw Self.failure(code, "cannot open the store folder \(base)", call: "open")
        }
        for part in parts {
            let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
            var next = openat(current, part, flags)
            if next < 0 && errno == ENOENT && create {
                if mkdirat(current, part, 0o755) == 0 {
                    // The new folder's name is durable before anything is stored in it.
                    fsync(current)
                } else if errno != EEXIST {
                    let code = errno
                    close(current)
                    throw Self.failure(code, "cannot create a folder for \(what)", call: "mkdirat")
                }
                next = openat(current, part, flags)
            }
            let code = errno
            close(current)
            guard next >= 0 else {
                if code == ENOENT { return nil }
                throw Self.failure(code, "cannot open the folder \(part) of \(what)", call: "openat")
            }
            current = next
        }
        return current
    }

    /// The object at `place`, opened for reading; nil if there is none. Anything but a
    /// regular file is refused before it is opened (opening a FIFO would block).
    func openObject(_ place: Place, key: String) throws(StoreError) -> Int32? {
        var info = stat()
        if place.status(&info) != 0 {
            if errno == ENOENT { return nil }
            throw Self.failure(errno, "cannot look at \(key)", call: "fstatat")
        }
        try Self.requireRegular(info, key)
        let fd = place.open(O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw Self.failure(errno, "cannot open \(key)", call: "openat")
        }
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw Self.failure(code, "cannot stat \(key)", call: "fstat")
        }
        do { try Self.requireRegular(info, key) } catch {
            close(fd)
            throw error
        }
        return fd
    }

    static func requireRegular(_ info: stat, _ key: String) throws(StoreError) {
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFREG else { return }
        let what = switch kind {
        case S_IFLNK: "a symlink"
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a folder"
        case S_IFCHR, S_IFBLK: "a device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
        throw StoreError(code: .corrupt, message: "\(key) is \(what) in the store folder, not an object; refused as damaged")
    }

    /// An unplugged disk or a dropped share: never "no such object".
    static func unreachable(_ base: String) -> StoreError {
        StoreError(code: .unreachable, message: "the store folder \(base) is not there (an unplugged disk or a dropped share?)")
    }

    /// ELOOP is a symlink on the way, EXDEV a way out of the folder: damage, not I/O.
    static func failure(_ code: Int32, _ message: String, call: String) -> StoreError {
        let cause = SystemError(errno: code, call: call)
        switch code {
        case ELOOP, EXDEV, ENOTDIR:
            return StoreError(code: .corrupt, message: message + ": a symlink or a non-folder in the store's path; refused as damaged", cause: cause)
        case EACCES, EPERM, EROFS:
            return StoreError(code: .accessDenied, message: message, cause: cause)
        default:
            return StoreError(code: .io, message: message, cause: cause)
        }
    }
}
