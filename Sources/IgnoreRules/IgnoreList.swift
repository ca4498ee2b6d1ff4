/// The patterns of one ignore file (a folder's `.ubiqfsignore`) or list (the device's),
/// applying to the items below its folder. The last pattern that matches decides.
public struct IgnoreList: Sendable, Equatable {
    /// The folder the patterns apply below, relative to the top (`""` for the top, `a/b`).
    public let folder: [UInt8]
    /// Where the patterns come from, for saying why an item is ignored.
    public let source: String
    public let patterns: [IgnorePattern]

    public init(folder: [UInt8], source: String, patterns: [IgnorePattern]) {
        self.folder = folder
        self.source = source
        self.patterns = patterns
    }

    /// The patterns of a file's bytes: lines end in `\n` (or `\r\n`); a UTF-8 byte order
    /// mark at the start is not part of the first line.
    public init(folder: [UInt8], source: String, contents: [UInt8]) {
        var body = contents[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        let lines = body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        self.init(folder: folder, source: source, patterns: lines.compactMap { IgnorePattern(line: $0) })
    }

    /// Whether this list applies to `path` (below its folder).
    public func covers(_ path: [UInt8]) -> Bool {
        folder.isEmpty || (path.count > folder.count + 1 && path.starts(with: folder) && path[folder.count] == UInt8(ascii: "/"))
    }

    /// The last pattern matching the item at `path` (relative to the top, `a/b/c`), which
    /// this list covers.
    public func lastMatch(_ path: [UInt8], isDirectory: Bool) -> IgnorePattern? {
        let relative = folder.isEmpty ? path[...] : path[(folder.count + 1)...]
        let nameStart = (relative.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 }) ?? relative.startIndex
        return patterns.last { $0.matches(relative, nameStart: nameStart, isDirectory: isDirectory) }
    }
}
