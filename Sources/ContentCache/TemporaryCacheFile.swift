import Glibc
import Synchronization

/// A cache file being written (a download, a version to restore): invisible until
/// `ContentCache.install` renames it into place, so a reader never sees half of a version.
/// It closes its descriptor once, whoever asks first (`install`, `discard`): a discard after
/// an install whose folder fsync failed must not close a descriptor number reused since.
public final class TemporaryCacheFile: Sendable {
    public let fd: Int32
    public let path: String
    private let closed = Atomic<Bool>(false)

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        Glibc.close(fd)
    }

    deinit { close() }
}
