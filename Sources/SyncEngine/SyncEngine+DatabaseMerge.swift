import ContentCache
import DatabaseMerge
import Foundation
import Glibc
import ItemModel

/// SQLite databases merge on disk (`DatabaseMerge`), in the cache's temporary folder
/// (cleared at each start, so a crash leaves nothing behind); the merged file is read back.
extension SyncEngine {
    func databaseMerge(base: [UInt8], ours: [UInt8], theirs: [UInt8]) async throws(SyncError) -> MergeResult {
        let cache = self.cache
        return try await OffloadedWork.run { () throws(SyncError) -> MergeResult in
            let output = cache.temporaryPath()
            defer { unlink(output) }
            do throws(DatabaseMergeError) {
                _ = try DatabaseMerge.merge(base: base, ours: ours, theirs: theirs, into: output)
            } catch {
                // Whatever the reason (an input SQLite finds damaged too, a full disk), the
                // copy: a merge retried for ever would hold the file back.
                return .refused(error.message)
            }
            guard let merged = FileManager.default.contents(atPath: output) else {
                throw SyncError(code: .cache, message: "cannot read the merged database back")
            }
            return .merged(Array(merged))
        }
    }
}
