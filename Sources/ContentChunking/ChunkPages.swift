/// Where a chunked file's list of chunks is cut into pages (issue 41: a record names a
/// file's pages, each page its chunks, so an edit rewrites the pages around it, not a
/// list as long as the file). The rule is format, for a second client:
///
/// A page ends after a chunk whose name's first four hex digits, read as a number, are
/// below `0x0400` (a name is 64 lowercase hex digits: SHA-256, or HMAC-SHA256 in an
/// encrypted container, so about one chunk in 64 ends a page), or once it holds
/// `maximumEntries` chunks. The last chunk ends the last page. No chunks, no pages.
public enum ChunkPages {
    /// The most chunks one page lists.
    public static let maximumEntries = 256
    /// A chunk whose name starts below this (as four hex digits) ends its page.
    static let endBelow = 0x0400

    /// The end of each page: indices into `names` (exclusive), ascending, the last
    /// `names.count`.
    public static func ends(of names: [String]) -> [Int] {
        var ends: [Int] = []
        var start = 0
        for (index, name) in names.enumerated() where endsPage(name) || index + 1 - start == maximumEntries {
            ends.append(index + 1)
            start = index + 1
        }
        if start < names.count { ends.append(names.count) }
        return ends
    }

    /// Whether the chunk named `name` ends its page: its first four hex digits are below
    /// `endBelow`. A name that does not start with four hex digits ends none.
    static func endsPage(_ name: String) -> Bool {
        guard let head = Int(name.prefix(4), radix: 16), name.utf8.prefix(4).count == 4 else { return false }
        return head < endBelow
    }
}
