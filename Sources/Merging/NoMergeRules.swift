import IgnoreRules

/// Which files never merge (they keep the conflict copy, as before merging): those a
/// `.ubiqfsnomerge` file above them names. Its lines are patterns in the syntax of
/// `.ubiqfsignore` (gitignore's); a file with no pattern (empty, or only comments) names
/// everything below its folder. As with ignore files, the deepest file with a matching
/// pattern decides, by its last match (`!` lets a file merge again), and a folder matched
/// takes everything in it. The files sync, so every device reads the same rules.
public struct NoMergeRules: Sendable {
    /// The name of the file that holds a folder's rules.
    public static let fileName = ".ubiqfsnomerge"
    /// What a file with no pattern stands for.
    private static let everything = IgnorePattern(line: Array("*".utf8))!

    private var rules = IgnoreRules()

    public init() {}

    /// Adds the rule file of `folder` (relative to the top, `a/b`; empty for the top).
    public mutating func add(folder: [UInt8], contents: [UInt8]) {
        let source = "/" + String(decoding: folder.isEmpty ? Array(Self.fileName.utf8) : folder + Array("/\(Self.fileName)".utf8), as: UTF8.self)
        var list = IgnoreList(folder: folder, source: source, contents: contents)
        if list.patterns.isEmpty { list = IgnoreList(folder: folder, source: source, patterns: [Self.everything]) }
        rules.set(list)
    }

    /// Why the file at `path` (relative to the top, `a/b/c`) never merges; nil if it may.
    public func reason(for path: [UInt8]) -> String? {
        for end in path.indices where path[end] == UInt8(ascii: "/") {
            if let reason = own(Array(path[..<end]), isDirectory: true) { return reason }
        }
        return own(path, isDirectory: false)
    }

    private func own(_ path: [UInt8], isDirectory: Bool) -> String? {
        guard let (pattern, list) = rules.decidingPattern(for: path, isDirectory: isDirectory), !pattern.negated else { return nil }
        return "merging is off for it: \"\(pattern.line)\" in \(list.source)"
    }
}
