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
}
