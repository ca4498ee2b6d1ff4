import Foundation
import Glibc

/// A mountpoint whose daemon died (kill -9, a crash) fails every access with ENOTCONN
/// until it is unmounted. `ubiqfs mount` on it detaches it first and says so, so one
/// command brings the folder back.
enum DeadMount {
    /// Detaches `path` if it is a dead FUSE mount; true if it was.
    static func recover(_ path: String) throws -> Bool {
        guard !isAlive(path) else { return false }
        // Lazy unmount: as root directly, otherwise through the setuid helper.
        if umount2(path, Int32(MNT_DETACH)) != 0 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "exec fusermount3 -uz \"$0\"", path]
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CommandFailure("\(path) is a dead mount (its daemon was killed) and cannot be detached; run `fusermount3 -uz \(path)`")
            }
        }
        FileHandle.standardError.write(Data("ubiqfs: \(path) was a dead mount (its daemon had stopped); detached it, mounting again\n".utf8))
        return true
    }

    /// False only for a FUSE mount whose daemon is gone. statvfs always asks the daemon;
    /// a stat, or an open of a folder (the kernel opens folders itself), may be answered
    /// from the kernel's caches even after the daemon died.
    static func isAlive(_ path: String) -> Bool {
        var info = statvfs()
        return statvfs(path, &info) == 0 || errno != ENOTCONN
    }
}
