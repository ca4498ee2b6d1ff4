import Foundation
import Glibc
import Synchronization

/// A TCP relay on 127.0.0.1 in front of a real server that breaks the first `cuts`
/// connections after `cutAfter` bytes of the server's reply (a link that drops midway),
/// and counts connections and reply bytes. Plain sockets on threads of its own.
public final class CuttingRelay: Sendable {
    public let port: UInt16
    private let listener: Int32
    private let target: UInt16
    private let cutAfter: Int
    private let cuts: Int
    private struct Counts { var connections = 0, replyBytes = 0, stopped = false }
    private let counts = Mutex(Counts())

    public init(to target: UInt16, cutAfter: Int, cuts: Int) throws {
        (self.target, self.cutAfter, self.cuts) = (target, cutAfter, cuts)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard listener >= 0, bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in acceptLoop() }.start()
    }

    public var connections: Int { counts.withLock { $0.connections } }
    public var replyBytes: Int { counts.withLock { $0.replyBytes } }

    public func stop() {
        counts.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let (number, stopped) = counts.withLock { counts in
                counts.connections += 1
                return (counts.connections, counts.stopped)
            }
            if stopped { close(client); return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard connected == 0 else { close(client); close(server); continue }
            let limit = number <= cuts ? cutAfter : Int.max
            let requestsDone = DispatchSemaphore(value: 0)
            Thread {
                Self.pump(from: client, to: server, limit: .max) { _ in }
                requestsDone.signal()
            }.start()
            Thread { [self] in
                Self.pump(from: server, to: client, limit: limit) { bytes in counts.withLock { $0.replyBytes += bytes } }
                // Both ways stop before the sockets are closed (no descriptor is reused under a read).
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(server, Int32(SHUT_RDWR))
                requestsDone.wait()
                close(client)
                close(server)
            }.start()
        }
    }

    /// Copies until either side closes or `limit` bytes have passed.
    private static func pump(from source: Int32, to sink: Int32, limit: Int, counted: (Int) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var passed = 0
        while passed < limit {
            let count = read(source, &buffer, min(buffer.count, limit - passed))
            guard count > 0 else { return }
            var written = 0
            while written < count {
                let sent = buffer[written ..< count].withUnsafeBytes { send(sink, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { return }
                written += sent
            }
            passed += count
            counted(count)
        }
    }
}
