import Foundation

/// Default locations, following the XDG base directory conventions.
enum Paths {
    static var home: String { ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory() }

    static var defaultStore: String {
        (ProcessInfo.processInfo.environment["XDG_DATA_HOME"] ?? home + "/.local/share") + "/ubiqfs/store"
    }

    static func defaultStateDir(container: String) -> String {
        (ProcessInfo.processInfo.environment["XDG_STATE_HOME"] ?? home + "/.local/state") + "/ubiqfs/" + container
    }

    /// Absolute and normalised by string rules only: no stat, because the path may be a
    /// FUSE mount that this very process serves (a stat before the loop runs would hang).
    static func absolute(_ path: String) -> String {
        var full = path
        if full == "~" || full.hasPrefix("~/") { full = home + full.dropFirst() }
        if !full.hasPrefix("/") { full = FileManager.default.currentDirectoryPath + "/" + full }
        var parts: [Substring] = []
        for part in full.split(separator: "/") {
            if part == "." { continue }
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    static var hostName: String {
        var buffer = [UInt8](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        let name = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
        return name.isEmpty ? "linux" : name
    }
}
