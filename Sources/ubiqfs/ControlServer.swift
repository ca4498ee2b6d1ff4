import Foundation
import CSystemShims
import Glibc
import Synchronization
import SyncEngine

/// The daemon's Unix socket (`<state-dir>/control.sock`, mode 0600): one JSON request
/// line per connection, one JSON reply (a `watch` request then streams events). Served by
/// one thread; each request's work runs in a Task so a slow `sync --wait` does not hold
/// the accept loop.
final class ControlServer: Sendable {
    let path: String
    private let listener: Int32
    private let handler: @Sendable (ControlRequest) async -> ControlResponse
    private let feed: ChangeFeed

    init(path: String, feed: ChangeFeed, handler: @escaping @Sendable (ControlRequest) async -> ControlResponse) throws {
        self.path = path
        self.feed = feed
        self.handler = handler
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CommandFailure("cannot create the control socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw CommandFailure("the state dir path is too long for a Unix socket: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let oldMask = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(oldMask)
        guard bound == 0, listen(fd, 16) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw CommandFailure("cannot listen on \(path): \(message)")
        }
        listener = fd
    }

    func start() {
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "ubiqfs-control"
        thread.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }

    private func acceptLoop() {
        while true {
            let client = CSystemShims_accept_cloexec(listener)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            // Socket I/O stays on this thread (bounded by timeouts), never on the cooperative pool.
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard let line = Self.readLine(client),
                  let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line.utf8))
            else {
                Self.send(ControlResponse(ok: false, error: "malformed request"), to: client)
                close(client)
                continue
            }
            if request.command == "watch" {
                let folder = request.path ?? "/"
                guard folder.hasPrefix("/") else {
                    Self.send(ControlResponse(ok: false, error: "watch needs a path inside the mount"), to: client)
                    close(client)
                    continue
                }
                WatchSession.start(client: client, folder: folder, feed: feed)
                continue
            }
            let handler = self.handler
            Task.detached {
                let response = await handler(request)
                DispatchQueue.global().async {
                    Self.send(response, to: client)
                    close(client)
                }
            }
        }
    }

    private static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 65536 {
            let n = read(fd, &byte, 1)
            if n <= 0 || byte == 10 { break }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    private static func send(_ response: ControlResponse, to fd: Int32) {
        guard let data = try? JSONEncoder().encode(response) else { return }
        var bytes = Array(data)
        bytes.append(10)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n <= 0 { return }
            done += n
        }
    }
}
