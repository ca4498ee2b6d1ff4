import Foundation
import Glibc
import Synchronization

/// inotify on a folder of the local store: another device writing to the same folder
/// (another mount on this machine, or a sync client delivering a commit) wakes the sync
/// engine at once instead of at its next poll. One thread blocks in poll(2) on the
/// inotify descriptor and a pipe that `stop` writes to.
final class LocalFolderWatch: StoreWatch {
    private let inotify: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopped = Atomic<Bool>(false)

    /// nil if inotify is not available here (the caller polls).
    init?(directory: String, onChange: @escaping @Sendable () -> Void) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        guard inotify >= 0 else { return nil }
        // Never through a symlink put where the folder was.
        let mask = UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_DONT_FOLLOW) | UInt32(IN_ONLYDIR)
        var pipeFDs: [Int32] = [-1, -1]
        guard inotify_add_watch(inotify, directory, mask) >= 0, pipe(&pipeFDs) == 0 else {
            close(inotify)
            return nil
        }
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        self.inotify = inotify
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        let thread = Thread { [inotify, wakeRead = pipeFDs[0]] in
            Self.run(inotify: inotify, wake: wakeRead, onChange: onChange)
            close(inotify)
            close(wakeRead)
        }
        thread.name = "ubiqfs-store-watch"
        thread.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        close(wakeWrite)
    }

    private static func run(inotify: Int32, wake: Int32, onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            // Drain every queued event: one callback per wake-up is enough, it is a hint.
            while read(inotify, &buffer, buffer.count) > 0 {}
            onChange()
        }
    }
}
