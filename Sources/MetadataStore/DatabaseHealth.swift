import Foundation
import GRDB

/// What `PRAGMA quick_check` says of a state database before the daemon trusts it.
/// Only damage counts as damage: a database that cannot be read for another reason
/// (permissions, a full disk, an I/O error) is an error to report, never a reason to
/// set the database aside and rebuild.
public enum DatabaseHealth: Sendable, Equatable {
    case missing
    case healthy
    case damaged(String)

    public static func check(path: String) throws(MetadataError) -> DatabaseHealth {
        guard FileManager.default.fileExists(atPath: path) else { return .missing }
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            let lines = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            return lines == ["ok"] ? .healthy : .damaged(lines.prefix(5).joined(separator: "; "))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            return .damaged(error.message ?? "\(error.resultCode)")
        } catch {
            throw MetadataStore.wrap(error)
        }
    }
}
