import CSystemShims
import Foundation
import Glibc

/// The CLI's item commands are thin layers over the xattr interface (docs/XATTRS.md),
/// so scripts using setfattr/getfattr get exactly the same behaviour. Never through a
/// symlink (a link in the container may point anywhere, /etc/shadow included), and only
/// on items a mount serves.
enum ItemXattrs {
    static func get(_ path: String, _ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = CSystemShims_lgetxattr(path, name, &buffer, buffer.count)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    static func set(_ path: String, _ name: String, _ value: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw CommandFailure("\(path): \(String(cString: strerror(errno)))") }
        if info.st_mode & S_IFMT == S_IFLNK {
            throw CommandFailure("\(path) is a symlink: ubiqfs acts on files and folders, never on what a link points to")
        }
        // Every item of a mount has a state, and its root a control socket; nothing outside one does.
        guard get(path, "user.ubiqfs.state") != nil || get(path, "user.ubiqfs.control") != nil else {
            throw CommandFailure("\(path) is not inside a ubiqfs mount")
        }
        let bytes = Array(value.utf8)
        guard CSystemShims_lsetxattr(path, name, bytes, bytes.count) == 0 else {
            let error = errno
            let reason = why(path, name, error).map { " (\($0))" } ?? ""
            throw CommandFailure("\(path): \(String(cString: strerror(error)))" + reason)
        }
    }

    /// What the item's state says of a refusal (the errno alone cannot).
    private static func why(_ path: String, _ name: String, _ error: Int32) -> String? {
        switch (name, error) {
        case ("user.ubiqfs.evict", EPERM) where get(path, "user.ubiqfs.state") == "ignored":
            return "it is ignored, and stays on this device, which has its only copy"
        case ("user.ubiqfs.evict", EPERM) where get(path, "user.ubiqfs.pinned") == "1":
            return "it is pinned; unpin it first"
        case ("user.ubiqfs.evict", EBUSY):
            return "it has changes not uploaded yet, or is open for writing"
        case ("user.ubiqfs.ignored", EBUSY):
            return "its content is not all on this device (download it first), or a file in it has hard links elsewhere"
        case ("user.ubiqfs.ignored", EPERM):
            return "the top of a mount always syncs"
        default:
            return nil
        }
    }

    /// Applies `body` to every path, reporting each failure and failing at the end if any did.
    static func each(_ paths: [String], _ body: (String) throws -> Void) throws {
        var failed = false
        for path in paths {
            do { try body(path) } catch {
                FileHandle.standardError.write(Data("ubiqfs: \(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCodeFailure() }
    }
}

/// Failure already reported line by line.
struct ExitCodeFailure: Error {}
