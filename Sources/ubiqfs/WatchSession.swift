import CSystemShims
import Dispatch
import Foundation
import Glibc
import Synchronization
import SyncEngine

/// One `watch` connection on the control socket: after the reply line, every change
/// event under the watched folder as one JSON line (docs/WATCH.md). Events are queued to
/// a serial queue, so emitters (FUSE threads, the sync engine) never wait on a socket; a
/// client that falls `maxQueued` events behind is disconnected rather than slowing the mount.
final class WatchSession: Sendable {
    static let maxQueued = 10_000

    private let client: Int32
    private let folder: String
    private let queue = DispatchQueue(label: "ubiqfs-watch")
    private let queued = Atomic<Int>(0)

    private init(client: Int32, folder: String) {
        self.client = client
        self.folder = folder
    }

    /// Serves the connection on its own thread until the client goes away.
    static func start(client: Int32, folder: String, feed: ChangeFeed) {
        let session = WatchSession(client: client, folder: folder)
        let thread = Thread { session.run(feed) }
        thread.name = "ubiqfs-watch"
        thread.start()
    }

    private func run(_ feed: ChangeFeed) {
        send(Array(#"{"ok":true}"#.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let subscription = feed.subscribe { [self] event in
            guard event.concerns(folder), let line = try? encoder.encode(event) else { return }
            if queued.add(1, ordering: .relaxed).newValue > Self.maxQueued {
                // Too far behind: end the connection; the client sees EOF and can resync.
                shutdown(client, Int32(SHUT_RDWR))
                return
            }
            queue.async { [self] in
                send(Array(line))
                queued.subtract(1, ordering: .relaxed)
            }
        }
        // The client never sends more; any readable state is its close (or garbage).
        var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
        while poll(&descriptor, 1, -1) < 0 && errno == EINTR {}
        feed.unsubscribe(subscription)
        queue.sync {}
        close(client)
    }

    private func send(_ line: [UInt8]) {
        var bytes = line
        bytes.append(10)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + done, $0.count - done, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                shutdown(client, Int32(SHUT_RDWR))
                return
            }
            done += n
        }
    }
}
