import Glibc
import ItemModel

/// The first 100 bytes of an input, SQLite's database header, read before SQLite opens the
/// file: a file that is no database is told apart from a broken one, and inputs in different
/// text encodings (which ATTACH refuses) are a schema change rather than an SQLite error.
struct DatabaseHeader {
    static let size = 100

    let bytes: [UInt8]

    init(path: String, side: Side) throws(DatabaseMergeError) {
        do {
            let fd = try Syscall.check("open") { open(path, O_RDONLY | O_CLOEXEC) }
            defer { close(fd) }
            bytes = try Syscall.readFully(fd: fd, count: Self.size, at: 0)
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: "\(side) (\(path)) cannot be read", cause: error)
        }
        guard bytes.count == Self.size, DatabaseMerge.isDatabase(bytes) else {
            throw DatabaseMergeError(code: .notDatabase, message: "\(side) (\(path)) is not an SQLite 3 database")
        }
    }

    /// 1 for UTF-8, 2 and 3 for UTF-16 little- and big-endian: a big-endian number at offset 56.
    var textEncoding: UInt32 {
        bytes[56..<60].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
