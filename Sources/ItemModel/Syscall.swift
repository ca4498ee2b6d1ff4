import Glibc

/// The one place that turns `-1/errno` into a typed error and retries EINTR,
/// in the manner of swift-system.
public enum Syscall {
    @discardableResult
    public static func check<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemError(errno: code, call: call)
        }
    }

    /// Writes all bytes at `offset` (pwrite may write less than asked).
    public static func writeAll(fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < buffer.count {
            let n = try check("pwrite") { pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            done += n
        }
    }

    public static func writeAll(fd: Int32, _ bytes: [UInt8], at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if n == -1 {
                if errno == EINTR { continue }
                throw SystemError(errno: errno, call: "pwrite")
            }
            done += n
        }
    }

    /// Reads up to `count` bytes at `offset`, stopping early only at end of file.
    public static func readFully(fd: Int32, count: Int, at offset: Int64) throws(SystemError) -> [UInt8] {
        // Uninitialised: a block buffer is up to 4 MiB, and zeroing it cost more than reading
        // a small file.
        var failure: SystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n == -1 {
                    if errno == EINTR { continue }
                    failure = SystemError(errno: errno, call: "pread")
                    break
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
        if let failure { throw failure }
        return bytes
    }

    public static func fsyncDirectory(_ path: String) throws(SystemError) {
        let fd = try check("open \(path)") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        try check("fsync \(path)") { fsync(fd) }
    }

    /// mkdir -p with the given mode for what it creates.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws(SystemError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, mode) == -1 && errno != EEXIST {
                throw SystemError(errno: errno, call: "mkdir \(current)")
            }
        }
    }
}
