import ContentCache
import DatabaseMerge
import Foundation
import Glibc
import ItemModel

/// SQLite databases merge on disk (`DatabaseMerge`): the three versions are written to the
/// cache's temporary folder (cleared at each start, so a crash leaves nothing behind), and
/// the merged file read back.
extension SyncEngine {
    func databaseMerge(base: [UInt8], ours: [UInt8], theirs: [UInt8]) async throws(SyncError) -> MergeResult {
        let cache = self.cache
        return try await OffloadedWork.run { () throws(SyncError) -> MergeResult in
            var files: [TemporaryCacheFile] = []
            let output = cache.temporaryPath()
            defer {
                for file in files { cache.discard(file) }
                for suffix in ["", "-wal", "-shm", "-journal"] { unlink(output + suffix) }
            }
            for bytes in [base, ours, theirs] {
                do { files.append(try cache.makeTemporary()) } catch {
                    throw SyncError(code: .cache, message: "cannot write a database to merge", cause: error)
                }
                try Self.writeAll(bytes, to: files[files.count - 1])
            }
            do throws(DatabaseMergeError) {
                _ = try DatabaseMerge.merge(base: files[0].path, ours: files[1].path, theirs: files[2].path, into: output)
            } catch {
                // Whatever the reason (an input SQLite finds damaged too), the copy: a merge
                // retried for ever would hold the file back.
                return .refused(error.message)
            }
            guard let merged = FileManager.default.contents(atPath: output) else {
                throw SyncError(code: .cache, message: "cannot read the merged database back")
            }
            return .merged(Array(merged))
        }
    }

    private static func writeAll(_ bytes: [UInt8], to file: TemporaryCacheFile) throws(SyncError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(file.fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw SyncError(code: errno == ENOSPC ? .diskFull : .cache, message: "cannot write a database to merge: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }
}
