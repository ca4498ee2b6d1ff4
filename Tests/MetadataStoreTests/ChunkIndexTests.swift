import Foundation
import GRDB
import ItemModel
@testable import MetadataStore
import Testing

/// The `chunk` table: where committed large files' blocks are, filled as snapshots are set
/// (and from the snapshots there are when a database of an older version is opened),
/// following a collector's moves, and forgetting the places found gone.
@Suite struct ChunkIndexTests {
    static func hash(_ byte: Int) -> String { String(repeating: String(format: "%02x", byte), count: 32) }
    static let pack = String(repeating: "a", count: 32)

    static func file(_ name: String, _ blocks: [BlockReference]) -> ItemSnapshot {
        ItemSnapshot(
            id: .random(), parent: .root, name: ByteString(name), kind: .file, mode: 0o644, mtime: 1, size: blocks.reduce(0) { $0 + $1.length }, blocks: blocks
        )
    }

    static func path() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-chunks-\(UUID().uuidString).db").path
    }

    /// Blocks of files of more than one block are found by name and length; a one-block
    /// file's and inline ones are not indexed.
    @Test func largeFilesBlocksAreFoundByNameAndLength() throws {
        let store = try MetadataStore(path: Self.path())
        let large = Self.file("large", [
            BlockReference(hash: Self.hash(1), length: 262_144),
            BlockReference(hash: Self.hash(2), length: 900_000, pack: Self.pack, offset: 0),
            BlockReference(hash: Self.hash(3), length: 5, inline: Data("hello".utf8)),
        ])
        let small = Self.file("small", [BlockReference(hash: Self.hash(4), length: 1000, pack: Self.pack, offset: 900_000)])
        try store.write { db in
            try BaseSnapshots.set(large, seq: 1, db)
            try BaseSnapshots.set(small, seq: 2, db)
        }
        let found = try store.read { db in
            try [(1, 262_144), (2, 900_000), (2, 899_999), (3, 5), (4, 1000)].map { try ChunkIndex.find(Self.hash($0), length: Int64($1), db) }
        }
        #expect(found == [large.blocks?[0], large.blocks?[1], nil, nil, nil])
    }

    /// A move names the blob's new pack; forgetting an object drops every block placed in it.
    @Test func movesAreFollowedAndForgottenObjectsDropped() throws {
        let store = try MetadataStore(path: Self.path())
        let newPack = String(repeating: "b", count: 32)
        let file = Self.file("f", [
            BlockReference(hash: Self.hash(1), length: 100, pack: Self.pack, offset: 0),
            BlockReference(hash: Self.hash(2), length: 200, pack: Self.pack, offset: 100, stored: 228),
        ])
        try store.write { db in
            try BaseSnapshots.set(file, seq: 1, db)
            _ = try BlobRelocations.apply([BlobMove(hash: Self.hash(2), length: 200, from: Self.pack, pack: newPack, offset: 64)], db)
        }
        let moved = try store.read { db in try [(1, 100), (2, 200)].map { try ChunkIndex.find(Self.hash($0), length: Int64($1), db) } }
        #expect(moved == [file.blocks?[0], BlockReference(hash: Self.hash(2), length: 200, pack: newPack, offset: 64, stored: 228)])
        try store.write { db in try ChunkIndex.forget(objects: [ContainerLayout.packKey(Self.pack)], db) }
        let left = try store.read { db in try [(1, 100), (2, 200)].map { try ChunkIndex.find(Self.hash($0), length: Int64($1), db) } }
        #expect(left[0] == nil && left[1]?.pack == newPack)
    }

    /// A database of the version before the index gets it filled from its committed
    /// snapshots when it is opened.
    @Test func anOlderDatabaseIsIndexedWhenOpened() throws {
        let path = Self.path()
        let file = Self.file("f", [BlockReference(hash: Self.hash(1), length: 262_144), BlockReference(hash: Self.hash(2), length: 10)])
        let pool = try DatabasePool(path: path)
        try MetadataStore.migrator.migrate(pool, upTo: "v20: held for a merge, as v18 stored it")
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO base(id, seq, snapshot, parent, name) VALUES (?, 1, ?, ?, ?)",
                arguments: [file.id.rawValue, try JSONEncoder().encode(file), ItemID.root.rawValue, Data("f".utf8)]
            )
        }
        try pool.close()
        let store = try MetadataStore(path: path)
        #expect(try store.read { db in try ChunkIndex.find(Self.hash(2), length: 10, db) } == file.blocks?[1])
    }
}
