import Foundation
import CSystemShims
import Glibc

/// Finds a mount's daemon (its root answers `user.ubiqfs.control` with the socket path)
/// and sends it one request.
enum ControlClient {
    static func send(_ request: ControlRequest, mountpoint: String) throws -> ControlResponse {
        let path = Paths.absolute(mountpoint)
        let socketPath = try socketPath(for: path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CommandFailure("cannot create a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            throw CommandFailure("\(path): cannot reach the ubiqfs daemon at \(socketPath): \(String(cString: strerror(errno)))")
        }
        var line = Array(try JSONEncoder().encode(request))
        line.append(10)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            reply += buffer[0..<n]
        }
        guard let response = try? JSONDecoder().decode(ControlResponse.self, from: Data(reply)) else {
            throw CommandFailure("\(path): the daemon closed the connection without a reply")
        }
        if !response.ok { throw CommandFailure("\(path): \(response.error ?? "failed")") }
        return response
    }

    static func socketPath(for mountpoint: String) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = CSystemShims_getxattr(mountpoint, "user.ubiqfs.control", &buffer, buffer.count)
        if n < 0 {
            switch errno {
            case ENOTCONN:
                throw CommandFailure("\(mountpoint): the mount's daemon is gone (dead mount); run `fusermount3 -uz \(mountpoint)` and mount again")
            case ENOENT:
                throw CommandFailure("\(mountpoint) does not exist")
            default:
                throw CommandFailure("\(mountpoint) is not a ubiqfs mount")
            }
        }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}
