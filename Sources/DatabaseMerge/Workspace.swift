import Foundation
import ItemModel

/// A private folder beside the output holding copies of the three inputs, which the merge
/// attaches. SQLite would create `-journal`, `-wal` and `-shm` files beside a database it
/// opens (read-only too, for one in WAL mode); copies keep all of that away from the
/// caller's files, and need no `file:…?immutable=1` URI, which SQLite takes only where it
/// was built to (`SQLITE_USE_URI`), or else reads as a file name and creates that file.
/// Beside the output so that the copies are on its disk, not in a RAM-backed /tmp.
struct Workspace {
    let path: String

    init(beside output: String) throws(DatabaseMergeError) {
        let folder = URL(fileURLWithPath: output).deletingLastPathComponent().path
        var template = Array((folder + "/.ubiqfs-dbmerge-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        guard made else {
            throw DatabaseMergeError(code: .sqlite, message: "cannot make a folder in \(folder)", cause: SystemError(errno: errno, call: "mkdtemp"))
        }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Copies each side's database into the folder; their paths.
    func copy(_ inputs: Sides<String>) throws(DatabaseMergeError) -> Sides<String> {
        try Sides { side throws(DatabaseMergeError) in
            let copy = path + "/" + side.rawValue + ".db"
            do {
                try FileManager.default.copyItem(atPath: inputs[side], toPath: copy)
            } catch {
                throw DatabaseMergeError(code: .sqlite, message: "cannot copy \(side) (\(inputs[side]))", cause: error)
            }
            return copy
        }
    }

    /// Writes each side's database into the folder; their paths.
    func write(_ inputs: Sides<[UInt8]>) throws(DatabaseMergeError) -> Sides<String> {
        try Sides { side throws(DatabaseMergeError) in
            let file = path + "/" + side.rawValue + ".db"
            guard FileManager.default.createFile(atPath: file, contents: Data(inputs[side])) else {
                throw DatabaseMergeError(code: .sqlite, message: "cannot write \(side) into \(path)", cause: SystemError(errno: errno, call: "write"))
            }
            return file
        }
    }

    /// Removes the folder. Best effort: by then the merge has its result or its error, which
    /// a folder left behind (in the output's own folder, named as ours) does not change.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
