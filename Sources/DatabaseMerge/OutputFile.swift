import Foundation

/// The merged database's file and the files SQLite keeps beside it while it is open.
struct OutputFile {
    static let companions = ["-wal", "-shm", "-journal"]

    let path: String

    /// Starts the output as a copy of theirs: ours' changes are applied to it. Refuses an
    /// existing file, which is not ours to overwrite (nor to remove when the merge fails).
    static func create(_ path: String, copying theirs: String) throws(DatabaseMergeError) -> OutputFile {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw DatabaseMergeError(code: .sqlite, message: "the output \(path) already exists")
        }
        do {
            try FileManager.default.copyItem(atPath: theirs, toPath: path)
        } catch {
            throw DatabaseMergeError(code: .sqlite, message: "cannot copy theirs (\(theirs)) to \(path)", cause: error)
        }
        return OutputFile(path: path)
    }

    /// After the connection closed: the file alone must be the whole database. SQLite removes
    /// the WAL and its index when the last connection closes; an empty WAL (checkpointed with
    /// TRUNCATE) or an index left is removed here; a WAL with frames in it is an error.
    func settle() throws(DatabaseMergeError) {
        let manager = FileManager.default
        let wal = path + "-wal"
        let walSize = (try? manager.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        guard walSize == 0 else {
            throw DatabaseMergeError(code: .sqlite, message: "the output's WAL still holds \(walSize) bytes after its checkpoint")
        }
        for companion in Self.companions where manager.fileExists(atPath: path + companion) {
            do {
                try manager.removeItem(atPath: path + companion)
            } catch {
                throw DatabaseMergeError(code: .sqlite, message: "cannot remove \(path + companion)", cause: error)
            }
        }
    }

    /// Removes the output of a merge that failed, and whatever SQLite left beside it. Best
    /// effort: the merge's own error is the one to report.
    func remove() {
        for suffix in [""] + Self.companions {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }
}
