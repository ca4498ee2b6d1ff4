import Glibc
import Synchronization

/// A few megabytes of the state disk held back in a preallocated file, so that a delete
/// can still be recorded when the disk is full (SQLite needs room in its WAL even to
/// delete a row). Released when a freeing change hits a full disk, taken back as soon
/// as there is room again.
public final class SpaceReserve: Sendable {
    public static let defaultSize: Int64 = 8 << 20
    public let path: String
    public let size: Int64
    private let held = Mutex(false)

    public init(path: String, size: Int64 = SpaceReserve.defaultSize) {
        self.path = path
        self.size = size
        restore()
    }

    public var isHeld: Bool { held.withLock { $0 } }

    /// Frees the reserve; false when there was none to free.
    public func release() -> Bool {
        held.withLock { held in
            guard held else { return false }
            unlink(path)
            held = false
            return true
        }
    }

    /// Takes the reserve back if the disk has room for it; a full disk leaves no partial file.
    public func restore() {
        held.withLock { held in
            guard !held else { return }
            let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            defer { close(fd) }
            if posix_fallocate(fd, 0, off_t(size)) == 0 {
                held = true
            } else {
                ftruncate(fd, 0)
            }
        }
    }
}
