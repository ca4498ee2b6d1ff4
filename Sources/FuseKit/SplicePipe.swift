internal import CSystemShims
internal import Glibc
internal import Synchronization

/// A pipe that holds a read's pages between the file and the reply. It is filled here, not
/// by libfuse, so a file that cannot be read is an error its caller answers, never a short
/// reply (which the kernel would take for the file's end). Idle pipes are kept for the next
/// read; one left holding bytes is closed, so no reply ever carries another's.
final class SplicePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    let capacity: Int

    private static let idle = Mutex<[SplicePipe]>([])
    /// Pipes kept idle: about as many as reads answered at once.
    private static let kept = 16

    private init(readEnd: Int32, writeEnd: Int32, capacity: Int) {
        (self.readEnd, self.writeEnd, self.capacity) = (readEnd, writeEnd, capacity)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// A pipe that holds `count` bytes from `offset` of a file: a slot per page they touch.
    /// Nil where no pipe may be that large (`/proc/sys/fs/pipe-max-size`, 1 MiB: the kernel's
    /// reads, page-aligned, fit; an unaligned direct read of 1 MiB does not).
    static func take(holding count: Int, from offset: Int64) -> SplicePipe? {
        let page = Int(getpagesize())
        let needed = (Int(offset % Int64(page)) + count + page - 1) / page * page
        if let pipe = idle.withLock({ pipes in pipes.firstIndex { $0.capacity >= needed }.map { pipes.remove(at: $0) } }) {
            return pipe
        }
        var ends: [Int32] = [0, 0]
        guard pipe2(&ends, O_CLOEXEC | O_NONBLOCK) == 0 else { return nil }
        let capacity = CSystemShims_set_pipe_size(ends[1], Int32(clamping: needed))
        let made = SplicePipe(readEnd: ends[0], writeEnd: ends[1], capacity: Int(capacity))
        return capacity >= needed ? made : nil
    }

    /// Moves `count` bytes of `file` from `offset` into the pipe (fewer at the file's end);
    /// nil if the pipe filled first, which its capacity should prevent.
    func fill(from file: Int32, offset: Int64, count: Int) throws(FuseError) -> Int? {
        var (position, moved) = (offset, 0)
        while moved < count {
            let n = CSystemShims_splice_to_pipe(file, &position, writeEnd, count - moved)
            if n > 0 {
                moved += n
            } else if n == 0 {
                break
            } else if errno == EAGAIN {
                return nil
            } else if errno != EINTR {
                throw FuseError(code: .readFailed, message: "cannot read \(count) bytes at \(offset) for a reply", errno: errno)
            }
        }
        return moved
    }

    /// The bytes in the pipe (-1 if that cannot be told).
    var pending: Int { Int(CSystemShims_pipe_pending(readEnd)) }

    /// Back to the idle pipes if empty; closed (when the last reference goes) if not.
    func recycle() {
        guard pending == 0 else { return }
        Self.idle.withLock { pipes in
            if pipes.count < Self.kept { pipes.append(self) }
        }
    }
}
