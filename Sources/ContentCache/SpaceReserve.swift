import Glibc
import Synchronization

/// A few megabytes of the state disk held back in a preallocated file, so that a delete
/// can still be recorded when the disk is full (SQLite needs room in its WAL even to
/// delete a row). Released when a freeing change hits a full disk, taken back as soon
/// as there is room again: as much of it as there is room for, since a delete that frees
/// nothing (an empty file) leaves the disk a few pages fuller than before, and deletes in
/// a row on a disk that stays full must each find some reserve.
public final class SpaceReserve: Sendable {
    public static let defaultSize: Int64 = 8 << 20
    /// Below this a reserve is not worth keeping (a delete's log pages fit in it many times).
    static let smallestSize: Int64 = 64 << 10
    public let path: String
    public let size: Int64
    /// Bytes held now: `size`, less after a restore on a disk with less room, 0 once spent.
    private let held = Mutex<Int64>(0)

    public init(path: String, size: Int64 = SpaceReserve.defaultSize) {
        self.path = path
        self.size = size
        restore()
    }

    public var isHeld: Bool { heldBytes > 0 }
    public var heldBytes: Int64 { held.withLock { $0 } }

    /// Frees the reserve; false when there was none to free.
    public func release() -> Bool {
        held.withLock { held in
            guard held > 0 else { return false }
            unlink(path)
            held = 0
            return true
        }
    }

    /// Takes the reserve back, whole if the disk has room for it, else the largest half,
    /// quarter... that fits; a disk with no room leaves no partial file.
    public func restore() {
        held.withLock { held in
            guard held < size else { return }
            let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            defer { close(fd) }
            var attempt = size
            while attempt >= Self.smallestSize && attempt > held {
                if posix_fallocate(fd, 0, off_t(attempt)) == 0 {
                    held = attempt
                    ftruncate(fd, off_t(attempt))
                    return
                }
                attempt /= 2
            }
            // A failed attempt may have left some blocks allocated past what is held.
            ftruncate(fd, off_t(held))
        }
    }
}
