import Foundation
import GRDB
import ItemModel
import Merging
import Testing

/// What `MergeRoundsTests` edits: files, a canonical form of their content for the model,
/// random edits, and the oracle of their merge.
protocol RoundsContent {
    static var files: [String] { get }
    /// The kind of merge (`ubiqfs merge`) that covers them.
    static var setting: String { get }
    /// A file's first content: canonical, and its bytes.
    static func initial(_ file: String, _ rng: inout SplitMix64) throws -> (canonical: String, bytes: [UInt8])
    /// A random edit of a file whose content is `canonical` and whose bytes here are `bytes`.
    static func edit(_ canonical: String, bytes: [UInt8], tag: String, _ rng: inout SplitMix64) throws -> (canonical: String, bytes: [UInt8])
    /// The canonical form of a file's bytes (a test failure if they are not what they should be).
    static func canonical(_ bytes: [UInt8]) throws -> String
    /// The oracle: the merge of both sides' edits, or nil for a copy.
    static func merge(base: String, ours: String, theirs: String) -> String?
}

/// Notes edited line by line; the oracle is `TextMerge`.
enum Notes: RoundsContent {
    static let files = ["a.md", "b.md", "c.txt"]
    static let setting = "text"

    static func initial(_ file: String, _ rng: inout SplitMix64) -> (canonical: String, bytes: [UInt8]) {
        let text = (0..<Int.random(in: 6...30, using: &rng)).map { "\(file) line \($0)\n" }.joined()
        return (text, Array(text.utf8))
    }

    static func edit(_ canonical: String, bytes: [UInt8], tag: String, _ rng: inout SplitMix64) -> (canonical: String, bytes: [UInt8]) {
        let text = MergeRandomizedTests.edit(canonical, tag, &rng)
        return (text, Array(text.utf8))
    }

    static func canonical(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func merge(base: String, ours: String, theirs: String) -> String? {
        TextMerge.merge(base: Array(base.utf8), ours: Array(ours.utf8), theirs: Array(theirs.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// SQLite databases whose rows are inserted, changed and deleted by SQL run on the file's
/// bytes; canonical form: the rows by key, one `id|body` a line. The oracle merges rows by
/// key: a row changed on one side only takes that change; the same change on both is one;
/// anything else (both changed it differently, one deleted what the other changed, both
/// inserted a key differently) is a copy.
enum Databases: RoundsContent {
    static let files = ["notes.db", "cards.sqlite"]
    static let setting = "sqlite"

    static func initial(_ file: String, _ rng: inout SplitMix64) throws -> (canonical: String, bytes: [UInt8]) {
        var rows: [Int: String] = [:]
        for id in 1...Int.random(in: 5...15, using: &rng) { rows[id] = "\(file) row \(id)" }
        let values = rows.keys.sorted().map { "(\($0), '\(rows[$0]!)')" }.joined(separator: ", ")
        let bytes = try DatabaseSyncMergeTests.database("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL); INSERT INTO notes VALUES \(values)")
        return (text(rows), bytes)
    }

    static func edit(_ canonical: String, bytes: [UInt8], tag: String, _ rng: inout SplitMix64) throws -> (canonical: String, bytes: [UInt8]) {
        var rows = self.rows(canonical)
        var statements: [String] = []
        for step in 0..<Int.random(in: 1...3, using: &rng) {
            let id = Int.random(in: 1...25, using: &rng)
            if rows[id] != nil && Int.random(in: 0..<3, using: &rng) == 0 {
                rows[id] = nil
                statements.append("DELETE FROM notes WHERE id = \(id)")
            } else {
                rows[id] = "\(tag) \(step)"
                statements.append("INSERT OR REPLACE INTO notes VALUES (\(id), '\(tag) \(step)')")
            }
        }
        let edited = try DatabaseSyncMergeTests.database(statements.joined(separator: "; "), on: bytes)
        return (text(rows), edited)
    }

    static func canonical(_ bytes: [UInt8]) throws -> String {
        let (rows, integrity) = try DatabaseSyncMergeTests.rows(bytes)
        #expect(integrity == "ok")
        return rows.map { $0.replacingOccurrences(of: "=", with: "|") + "\n" }.joined()
    }

    static func merge(base: String, ours: String, theirs: String) -> String? {
        let (base, ours, theirs) = (rows(base), rows(ours), rows(theirs))
        var merged = theirs
        for id in Set(base.keys).union(ours.keys) where ours[id] != base[id] && theirs[id] != ours[id] {
            guard theirs[id] == base[id] else { return nil }
            merged[id] = ours[id]
        }
        return text(merged)
    }

    static func rows(_ text: String) -> [Int: String] {
        Dictionary(uniqueKeysWithValues: text.split(separator: "\n").map { line in
            let parts = line.split(separator: "|", maxSplits: 1)
            return (Int(parts[0])!, String(parts.count > 1 ? parts[1] : ""))
        })
    }

    static func text(_ rows: [Int: String]) -> String {
        rows.keys.sorted().map { "\($0)|\(rows[$0]!)\n" }.joined()
    }
}
