import Foundation
import Glibc
import Synchronization

/// Folders the tests make under the temporary directory (devices' state, stores, the
/// SeaweedFS data), removed when the test process exits: a hundred test devices a run
/// would otherwise leave gigabytes behind. One a failing test wants to keep for a person
/// to look at (a soak's state dirs) is `kept`.
public enum TemporaryDirectories {
    private static let made = Mutex<Set<String>>([])
    private static let registered: Void = { atexit { TemporaryDirectories.removeAll() } }()

    /// A new folder `<tmp>/<prefix>-<uuid>`, created, and removed at exit.
    public static func make(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        remove(atExit: path)
        return path
    }

    /// Removes `path` when the test process exits.
    public static func remove(atExit path: String) {
        _ = registered
        made.withLock { _ = $0.insert(path) }
    }

    /// Leaves `path` behind after all.
    public static func keep(_ path: String) {
        made.withLock { _ = $0.remove(path) }
    }

    private static func removeAll() {
        for path in made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
