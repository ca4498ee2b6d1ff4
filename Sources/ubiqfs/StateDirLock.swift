import Foundation
import Glibc

/// The lock a running daemon holds on its state dir (`STATE/lock`, flock): one daemon per
/// state dir; `reset` takes it too, so no daemon starts while it works, and `doctor` only
/// looks whether someone holds it.
enum StateDirLock {
    enum Outcome {
        /// Ours until the descriptor is closed (or the process ends).
        case taken(Int32)
        /// Another process holds it: a daemon is using the state dir.
        case held
        /// No lock file, and `create` was not asked for (or it cannot be made).
        case absent
    }

    static func take(_ stateDir: String, create: Bool) -> Outcome {
        let fd = open(stateDir + "/lock", O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0o600)
        guard fd >= 0 else { return .absent }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return .held
        }
        return .taken(fd)
    }

    /// Left in the state dir while a daemon does its last push after an unmount: the next
    /// mount of the same state dir (a remount, `systemctl restart`) waits for that daemon
    /// instead of failing.
    static let stopping = "stopping"

    /// Takes the lock, waiting for a daemon that is stopping (`stopping`) to let it go: its
    /// last push is bounded, so `limit` is too. A daemon that is serving a mount is no
    /// reason to wait; `grace` covers the moment between an unmount and its marker.
    static func takeWaiting(_ stateDir: String, limit: Double = 150, grace: Double = 2, waiting: () -> Void) -> Outcome {
        let start = Date()
        var seen = false
        while true {
            let outcome = take(stateDir, create: true)
            guard case .held = outcome else { return outcome }
            let elapsed = Date().timeIntervalSince(start)
            if !seen && access(stateDir + "/" + Self.stopping, F_OK) == 0 {
                seen = true
                waiting()
            }
            if elapsed > limit || (!seen && elapsed > grace) { return outcome }
            usleep(100_000)
        }
    }

    /// Marks the state dir as `stopping` (mode 0600, the daemon's pid); nil or what failed.
    static func markStopping(_ stateDir: String) -> String? {
        let fd = open(stateDir + "/" + Self.stopping, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        let line = Array("\(getpid())\n".utf8)
        return write(fd, line, line.count) == line.count ? nil : String(cString: strerror(errno))
    }
}
