import Glibc
import ItemModel

/// The few file operations the cache needs, over the C calls (GLib's own, so that what
/// ubiqfs writes looks as what gnome-desktop writes): `SystemError` causes become `.io`.
enum CacheFiles {
    /// Writes `bytes` to `path` as gnome-desktop's `save_thumbnail` does: a `path.XXXXXX`
    /// temporary file in the same folder (mode 0600), then a rename over `path`, so a reader
    /// sees the old entry or the new one, never part of one. Not fsynced: it is a cache, and
    /// a torn entry fails its checks and is made again.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(ThumbnailError) {
        var template = Array((path + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw failure("cannot create a temporary file for \(path)", SystemError(errno: errno, call: "mkstemp")) }
        do {
            defer { close(fd) }
            try Syscall.check("fchmod") { fchmod(fd, 0o600) }
            try Syscall.writeAll(fd: fd, bytes, at: 0)
        } catch {
            unlink(temporary)
            throw failure("cannot write \(temporary)", error)
        }
        guard rename(temporary, path) == 0 else {
            let cause = SystemError(errno: errno, call: "rename")
            unlink(temporary)
            throw failure("cannot rename \(temporary) to \(path)", cause)
        }
    }

    /// The file's bytes; nil if there is none (or it cannot be read: an entry no one can read
    /// is as good as none, and GIO treats it so).
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return try? Syscall.readFully(fd: fd, count: Int(status.st_size), at: 0)
    }

    /// Deletes the file; one that is not there is not an error.
    static func remove(_ path: String) throws(ThumbnailError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw failure("cannot delete \(path)", SystemError(errno: errno, call: "unlink"))
        }
    }

    /// mkdir -p with mode 0700 for what it creates (as `g_mkdir_with_parents(dir, 0700)`).
    static func makeFolder(_ path: String) throws(ThumbnailError) {
        do { try Syscall.makeDirectories(path, mode: 0o700) } catch { throw failure("cannot create \(path)", error) }
    }

    /// The names of the folders in `path`; none if it is not there.
    static func subfolders(of path: String) throws(ThumbnailError) -> [String] {
        guard let directory = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return [] }
            throw failure("cannot list \(path)", SystemError(errno: errno, call: "opendir"))
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name != ".", name != ".." else { continue }
            var status = stat()
            if stat(path + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { names.append(name) }
        }
        return names.sorted()
    }

    private static func failure(_ message: String, _ cause: any Error) -> ThumbnailError {
        ThumbnailError(code: .io, message: message, cause: cause)
    }
}
