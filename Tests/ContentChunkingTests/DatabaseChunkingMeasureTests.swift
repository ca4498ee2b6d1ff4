import ContentChunking
import Crypto
import Foundation
import GRDB
import ItemModel
import Testing

/// What ten rows changed in a real SQLite database of about 200 MiB cost under each chunk
/// average (issue 41's goal: under 1 MiB uploaded), in content and in manifest: the bytes
/// of new chunks, and the manifest a record carries, either one reference per chunk or
/// list pages (the chunk list cut after each chunk whose hash starts below 1/64 of the
/// range, at most 256 entries a page), of which only pages that changed are new and the
/// record names each page. SQLite's own integrity check on the edited file shows the edit
/// is one SQLite made. Printed to choose the sizes; nothing is held to a bound.
@Suite struct DatabaseChunkingMeasureTests {
    static let rows = 1_000_000
    static let averages = [16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20]

    /// Off Swift's cooperative pool: a minute of CPU there would starve the tests that await.
    @Test func tenRowsOfALargeDatabase() async throws {
        let (table, integrity, changed) = try await OffloadedWork.run { () throws -> (String, String?, Bool) in try Self.measure() }
        print(table)
        #expect(integrity == "ok")
        #expect(changed)
    }

    /// The table, SQLite's verdict on the edited file, and whether the edit changed its bytes.
    /// Both versions stay on disk and are chunked as they stream (a piece at a time), so the
    /// test holds lists of hashes, not 400 MiB of content.
    static func measure() throws -> (String, String?, Bool) {
        let folder = NSTemporaryDirectory() + "ubiqfs-chunk-db-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (path, oldPath) = (folder + "/notes.db", folder + "/notes-before.db")
        var rng = TestContent.generator(41)
        try Self.make(path, &rng)
        try FileManager.default.copyItem(atPath: path, toPath: oldPath)
        try Self.changeTenRows(path, &rng)
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        var lines = [
            "DatabaseChunkingMeasureTests: seed \(TestContent.seed), \(String(format: "%.1f", Double(size) / 1_048_576)) MiB database, ten rows updated, unkeyed",
            "| average | chunks | new chunks | manifest, one reference a chunk | manifest as list pages: new pages + page references | total with pages |",
            "|---|---|---|---|---|---|",
        ]
        var changed = false
        for average in Self.averages as [Int?] + [nil] {
            let parameters = try average.map { try ChunkerParameters.unkeyed(average: $0) }
            let old = try Self.chunks(oldPath, parameters)
            let new = try Self.chunks(path, parameters)
            changed = changed || old.map(\.hash) != new.map(\.hash)
            lines.append(Self.row(average.map { "\($0 >> 10) KiB" } ?? "fixed 4 MiB", old: old, new: new))
        }
        return (lines.joined(separator: "\n"), try Self.integrity(path), changed)
    }

    /// A file's chunks (hash and length) as it streams: cut by `parameters`, or in fixed
    /// blocks of 4 MiB (the control) when nil.
    static func chunks(_ path: String, _ parameters: ChunkerParameters?) throws -> [(hash: SHA256.Digest, length: Int)] {
        guard let file = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile) }
        defer { try? file.close() }
        var chunker = parameters.map { Chunker(parameters: $0) }
        var (chunks, pending, start) = ([(hash: SHA256.Digest, length: Int)](), [UInt8](), 0)
        func take(_ cuts: [Int]) {
            for cut in cuts {
                chunks.append((SHA256.hash(data: pending[0..<(cut - start)]), cut - start))
                pending.removeFirst(cut - start)
                start = cut
            }
        }
        while let piece = try file.read(upToCount: 4 << 20), !piece.isEmpty {
            pending += piece
            if chunker != nil {
                take(chunker!.append(piece))
            } else {
                take(Array(stride(from: start + (4 << 20), through: start + pending.count, by: 4 << 20)))
            }
        }
        if let last = chunker?.finish() {
            take([last])
        } else if chunker == nil && !pending.isEmpty {
            take([start + pending.count])
        }
        return chunks
    }

    /// `rows` notes with a title, a body of about 180 bytes and a time, indexed by time.
    static func make(_ path: String, _ rng: inout SplitMix64) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, updated INTEGER NOT NULL)")
            try db.execute(sql: "CREATE INDEX notes_updated ON notes(updated)")
            let insert = try db.makeStatement(sql: "INSERT INTO notes VALUES (?, ?, ?, ?)")
            for id in 1...rows {
                try insert.execute(arguments: [id, Self.words(4, &rng), Self.words(28, &rng), 1_700_000_000 + id])
            }
        }
        try queue.close()
    }

    /// Ten notes at random, given a new body and time, in one transaction (rollback journal).
    static func changeTenRows(_ path: String, _ rng: inout SplitMix64) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for index in 0..<10 {
                try db.execute(sql: "UPDATE notes SET body = ?, updated = ? WHERE id = ?", arguments: [Self.words(28, &rng), 1_800_000_000 + index, 1 + rng.below(rows)])
            }
        }
        try queue.close()
    }

    static func integrity(_ path: String) throws -> String? {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
    }

    static func words(_ count: Int, _ rng: inout SplitMix64) -> String {
        (0..<count).map { _ in String(decoding: (0..<(2 + rng.below(6))).map { _ in UInt8(97 + rng.below(26)) }, as: UTF8.self) }.joined(separator: " ")
    }

    /// One table row: the chunks, the new chunks' bytes, and both manifests.
    static func row(_ name: String, old: [(hash: SHA256.Digest, length: Int)], new: [(hash: SHA256.Digest, length: Int)]) -> String {
        let known = Set(old.map(\.hash))
        let fresh = new.filter { !known.contains($0.hash) }
        let changed = (count: fresh.count, bytes: fresh.reduce(0) { $0 + $1.length })
        let (oldHashes, newHashes) = (old.map(\.hash), new.map(\.hash))
        let lengths = new.map(\.length)
        let entries = zip(newHashes, lengths).map { Self.entryBytes($0, length: $1) }
        let flat = entries.reduce(0, +) + entries.count + 1
        let oldPages = Set(Self.pages(oldHashes).map { $0.map { oldHashes[$0] } })
        var (newPageBytes, references) = (0, 0)
        for page in Self.pages(newHashes) {
            let bytes = page.reduce(2) { $0 + entries[$1] + 1 }
            // A page's reference: its hash, length and place, and the content bytes and chunks it covers.
            references += Self.entryBytes(SHA256.hash(data: Array("page \(page[0])".utf8)), length: bytes) + 30
            if !oldPages.contains(page.map { newHashes[$0] }) { newPageBytes += bytes }
        }
        return "| \(name) | \(new.count) | \(mib(changed.bytes)) (\(changed.count)) | \(mib(flat)) | \(mib(newPageBytes)) + \(mib(references)) | \(mib(changed.bytes + newPageBytes + references)) |"
    }

    /// The chunk list cut into pages (indices into it): a page ends after a chunk whose
    /// hash's first two bytes are below 1024, or at 256 entries.
    static func pages(_ hashes: [SHA256.Digest]) -> [[Int]] {
        var (pages, page) = ([[Int]](), [Int]())
        for (index, hash) in hashes.enumerated() {
            page.append(index)
            let head = hash.withUnsafeBytes { Int($0[0]) << 8 | Int($0[1]) }
            if head < 1024 || page.count == 256 {
                pages.append(page)
                page = []
            }
        }
        if !page.isEmpty { pages.append(page) }
        return pages
    }

    /// A packed chunk's reference as a record spells it today (`{"h", "n", "p", "o"}`).
    static func entryBytes(_ hash: SHA256.Digest, length: Int) -> Int {
        let hex = hash.map { String(format: "%02x", $0) }.joined()
        let reference = BlockReference(hash: hex, length: Int64(length), pack: String(repeating: "0", count: 32), offset: 7_654_321)
        return (try? JSONEncoder().encode(reference).count) ?? 0
    }

    static func mib(_ bytes: Int) -> String {
        String(format: "%.2f MiB", Double(bytes) / 1_048_576)
    }
}
