import Foundation
import CSystemShims
import Glibc

/// Finds a mount's daemon (its root answers `user.ubiqfs.control` with the socket path)
/// and sends it one request.
enum ControlClient {
    static func send(_ request: ControlRequest, mountpoint: String) throws -> ControlResponse {
        let (path, fd) = try connect(request, mountpoint: mountpoint)
        defer { close(fd) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            reply += buffer[0..<n]
        }
        return try decode(reply, path: path)
    }

    /// For `watch`: the reply line, then every further line to `receive` until the daemon
    /// closes the connection (the mount ended) or `receive` returns false.
    static func stream(_ request: ControlRequest, mountpoint: String, receive: (String) -> Bool) throws {
        let (path, fd) = try connect(request, mountpoint: mountpoint)
        defer { close(fd) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var replied = false
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            pending += buffer[0..<n]
            while let newline = pending.firstIndex(of: 10) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                if !replied {
                    _ = try decode(line, path: path)
                    replied = true
                } else if !receive(String(decoding: line, as: UTF8.self)) {
                    return
                }
            }
        }
        if !replied { _ = try decode(pending, path: path) }
    }

    /// `mountpoint` may also be any file or folder inside a mount, or a profile's name.
    private static func connect(_ request: ControlRequest, mountpoint: String) throws -> (path: String, fd: Int32) {
        let given = Paths.absolute(try MountProfile.mountpoint(for: mountpoint))
        // Not inside a live mount: the mountpoint's own error says why (gone, dead, not ubiqfs).
        let path = (try? locate(given).mountpoint) ?? given
        let socketPath = try socketPath(for: path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CommandFailure("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw CommandFailure("\(path): cannot reach the ubiqfs daemon at \(socketPath): \(reason)")
        }
        // Requests carry passphrases: only to a daemon of this user's (or root's), never to
        // whatever somebody else put at that path.
        var peer = (pid: Int32(0), uid: UInt32(0), gid: UInt32(0))
        var length = socklen_t(MemoryLayout.size(ofValue: peer))
        let known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0
        guard known, peer.uid == getuid() || peer.uid == 0 else {
            close(fd)
            let who = known ? "is served by uid \(peer.uid)" : "does not say who serves it"
            throw CommandFailure("\(path): the control socket \(socketPath) \(who), not by your ubiqfs daemon; nothing was sent")
        }
        var line = Array(try JSONEncoder().encode(request))
        line.append(10)
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return (path, fd)
    }

    private static func decode(_ reply: [UInt8], path: String) throws -> ControlResponse {
        guard let response = try? JSONDecoder().decode(ControlResponse.self, from: Data(reply)) else {
            throw CommandFailure("\(path): the daemon closed the connection without a reply")
        }
        if !response.ok { throw CommandFailure("\(path): \(response.error ?? "failed")") }
        return response
    }

    /// The path inside `mountpoint` of `argument`, in the bytes the user gave: a name that
    /// is not UTF-8 reaches the daemon whole (`ControlRequest.pathBytes`).
    static func insideBytes(_ argument: String, mountpoint: String) -> [UInt8] {
        let absolute = Paths.absolute(bytes: Paths.rawArgument(argument))
        let inside = mountpoint == "/" ? absolute : Array(absolute.dropFirst(mountpoint.utf8.count))
        return inside.isEmpty ? [UInt8(ascii: "/")] : inside
    }

    /// The mount that holds `path` and the path inside it ("/" for the root): the nearest
    /// folder up from `path` whose root xattr names a control socket.
    static func locate(_ path: String) throws -> (mountpoint: String, inside: String) {
        let absolute = Paths.absolute(path)
        var candidate = absolute
        while true {
            if ItemXattrs.get(candidate, "user.ubiqfs.control") != nil {
                let inside = String(absolute.dropFirst(candidate == "/" ? 0 : candidate.count))
                return (candidate, inside.isEmpty ? "/" : inside)
            }
            guard candidate != "/", let slash = candidate.lastIndex(of: "/") else {
                throw CommandFailure("\(absolute) is not inside a ubiqfs mount")
            }
            candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
        }
    }

    static func socketPath(for mountpoint: String) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = CSystemShims_getxattr(mountpoint, "user.ubiqfs.control", &buffer, buffer.count)
        if n < 0 {
            switch errno {
            case ENOTCONN:
                throw CommandFailure("\(mountpoint): the mount's daemon is gone (dead mount); `ubiqfs mount` on it again recovers it")
            case ENOENT:
                throw CommandFailure("\(mountpoint) does not exist")
            default:
                throw CommandFailure("\(mountpoint) is not a ubiqfs mount")
            }
        }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}
