import Foundation
import Glibc

/// A state dir holds the device's keys, content and control socket: it must be the
/// user's own and private, and so must what is in it. One made by somebody else (a
/// `/tmp` path another user took first, with a log symlinked to the user's files or
/// cache files they can read) is refused at mount, never repaired in place.
enum StateDirSafety {
    /// The names a daemon opens in its state dir by path.
    static let knownNames = ["state.db", "state.db-wal", "state.db-shm", "ubiqfs.log", "control.sock", "container.key", "cache", "lock", "store-verified"]

    /// Makes the folder (0700) if missing, then refuses it unless it and every known
    /// name in it are owned by this user, none a symlink, and the folder private.
    static func prepare(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw CommandFailure("cannot create the state dir \(path): \(error.localizedDescription)")
            }
        }
        try check(path)
    }

    static func check(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw CommandFailure("cannot use the state dir \(path): \(String(cString: strerror(errno)))") }
        // The folder itself may be reached through a link the user made; what matters is whose it is.
        if info.st_mode & S_IFMT == S_IFLNK, stat(path, &info) != 0 {
            throw CommandFailure("cannot use the state dir \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw CommandFailure("the state dir \(path) is not a folder") }
        try requireOwn(info, "the state dir \(path)")
        if info.st_mode & 0o077 != 0 {
            guard chmod(path, 0o700) == 0 else {
                throw CommandFailure("the state dir \(path) is open to others (mode \(String(info.st_mode & 0o777, radix: 8))) and cannot be made private: \(String(cString: strerror(errno)))")
            }
        }
        for name in knownNames {
            var entry = stat()
            guard lstat(path + "/" + name, &entry) == 0 else { continue }
            if entry.st_mode & S_IFMT == S_IFLNK {
                throw CommandFailure("\(path)/\(name) is a symlink; a state dir holds no links (was it made by somebody else?). Use a new state dir (--state-dir)")
            }
            try requireOwn(entry, "\(path)/\(name)")
        }
    }

    private static func requireOwn(_ info: stat, _ what: String) throws {
        guard info.st_uid == getuid() else {
            throw CommandFailure("\(what) belongs to uid \(info.st_uid), not to you (uid \(getuid())); a state dir must be your own and private. Use your own (--state-dir)")
        }
    }
}
