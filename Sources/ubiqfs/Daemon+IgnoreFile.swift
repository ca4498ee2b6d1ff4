import Foundation
import IgnoreRules

extension Daemon {
    /// This device's own ignore patterns (`--ignore-file`); none without the option. A
    /// file named but unreadable stops the mount: a list silently missing would sync what
    /// it was meant to keep here.
    static func deviceIgnores(_ path: String?) throws -> IgnoreList {
        guard let path else { return IgnoreList(folder: [], source: "this device's list", patterns: []) }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("--ignore-file \(path): cannot read it")
        }
        return IgnoreList(folder: [], source: path, contents: Array(contents))
    }
}
