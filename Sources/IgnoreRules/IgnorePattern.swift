/// One pattern of an ignore file, in gitignore syntax: `!` re-includes, a trailing `/`
/// matches folders only, a `/` at the start or in the middle anchors the pattern to the
/// file's folder (else it matches a name at any depth below it).
public struct IgnorePattern: Sendable, Equatable {
    /// The line as written, for saying why an item is ignored.
    public let line: String
    /// Whether a match re-includes what an earlier pattern ignored.
    public let negated: Bool
    let glob: [UInt8]
    let directoryOnly: Bool
    /// No `/` in the pattern: it matches an item's name, at any depth.
    let matchesName: Bool

    /// The pattern of one line (without its `\n`); nil for a blank line or a comment.
    public init?(line bytes: some Collection<UInt8>) {
        var text = Array(bytes)
        if text.last == UInt8(ascii: "\r") { text.removeLast() }
        guard let first = text.first, first != UInt8(ascii: "#") else { return nil }
        Self.trimTrailingSpaces(&text)
        line = String(decoding: text, as: UTF8.self)
        negated = text.first == UInt8(ascii: "!")
        if negated { text.removeFirst() }
        directoryOnly = text.last == UInt8(ascii: "/")
        if directoryOnly { text.removeLast() }
        matchesName = !text.contains(UInt8(ascii: "/"))
        // Anchored: the leading `/` only says so; the path is matched from the folder.
        if text.first == UInt8(ascii: "/") { text.removeFirst() }
        glob = text
    }

    /// Spaces at the end go, unless the last one is escaped (`\ `).
    private static func trimTrailingSpaces(_ text: inout [UInt8]) {
        var firstTrailing: Int?
        var i = 0
        while i < text.count {
            switch text[i] {
            case UInt8(ascii: " "):
                if firstTrailing == nil { firstTrailing = i }
            case UInt8(ascii: "\\"):
                i += 1
                if i == text.count { return }
                firstTrailing = nil
            default:
                firstTrailing = nil
            }
            i += 1
        }
        if let firstTrailing { text.removeSubrange(firstTrailing...) }
    }

    /// Whether the item at `path` (relative to the pattern's folder, `a/b`) matches;
    /// `nameStart` is where its last component begins.
    func matches(_ path: ArraySlice<UInt8>, nameStart: Int, isDirectory: Bool) -> Bool {
        if directoryOnly && !isDirectory { return false }
        if matchesName { return Wildmatch.matches(glob, Array(path[nameStart...]), pathname: false) }
        return Wildmatch.matches(glob, Array(path), pathname: true)
    }
}
