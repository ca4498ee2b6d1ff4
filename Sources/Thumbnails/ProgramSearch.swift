import Foundation
import Glibc

/// Finds a program as `execvp` would, so the one spawned is the one checked.
enum ProgramSearch {
    /// The first executable `name` in the process's PATH (or /usr/bin:/bin without one).
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
