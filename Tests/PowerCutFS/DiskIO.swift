internal import Glibc

/// The few real-disk calls the backing folder needs, each retrying EINTR and turning -1 into
/// a `BackingError` that names the path.
enum DiskIO {
    /// The whole file, or nil if it does not exist.
    static func read(_ path: String) throws(BackingError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw .system("cannot open", path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system("cannot stat", path) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw count == 0 ? BackingError("\(path) shrank while being read") : .system("cannot read", path) }
            done += count
        }
        return bytes
    }

    /// Writes all of `bytes` at `offset` (pwrite), or at the end for an O_APPEND descriptor.
    static func write(_ fd: Int32, _ bytes: [UInt8], at offset: UInt64? = nil, path: String) throws(BackingError) {
        var done = 0
        let total = bytes.count
        while done < total {
            let count = bytes.withUnsafeBytes { buffer -> Int in
                let start = buffer.baseAddress! + done
                if let offset { return pwrite(fd, start, total - done, off_t(offset) + off_t(done)) }
                return Glibc.write(fd, start, total - done)
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .system("cannot write", path) }
            done += count
        }
    }

    static func sync(_ fd: Int32, path: String) throws(BackingError) {
        while fsync(fd) != 0 {
            guard errno == EINTR else { throw .system("cannot fsync", path) }
        }
    }

    /// Replaces `path` with `bytes` so that a crash leaves the old or the new file, never a
    /// mix: a temporary file written and synced, renamed over it, the folder synced.
    static func replace(_ path: String, with bytes: [UInt8], folder: String) throws(BackingError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system("cannot create", temporary) }
        do {
            try write(fd, bytes, at: 0, path: temporary)
            try sync(fd, path: temporary)
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw .system("cannot rename \(temporary) to", path) }
        try syncFolder(folder)
    }

    static func syncFolder(_ path: String) throws(BackingError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("cannot open", path) }
        defer { close(fd) }
        try sync(fd, path: path)
    }

    /// The names in a folder, without "." and "..".
    static func list(_ path: String) throws(BackingError) -> [String] {
        guard let folder = opendir(path) else { throw .system("cannot list", path) }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
