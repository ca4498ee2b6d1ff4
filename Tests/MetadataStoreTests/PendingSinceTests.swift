import Foundation
import GRDB
import Inodes
import ItemModel
@testable import MetadataStore
import Testing

/// `dirtySince` follows every way `dirty` is written (whole rows, the narrow statements of
/// the write path), so the oldest pending change's age is right whatever wrote it.
@Suite struct PendingSinceTests {
    func makeStore() throws -> MetadataStore {
        try MetadataStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-pending-\(UUID().uuidString).db").path)
    }

    func since(_ ino: Inode, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT dirtySince FROM item WHERE ino = ?", arguments: [ino])
    }

    @Test func setWhenChangesStartToWaitAndClearedWhenNoneDo() throws {
        let store = try makeStore()
        try store.write { db in
            #expect(try PendingSince.oldest(db) == nil)
            var clean = ItemRow(id: .random(), parent: .root, name: ByteString("clean"), kind: .file, mode: 0o644, uid: 0, gid: 0, size: 0, mtime: 1)
            try clean.insert(db)
            #expect(try since(clean.inode, db) == nil)
            var row = ItemRow(id: .random(), parent: .root, name: ByteString("x"), kind: .file, mode: 0o644, uid: 0, gid: 0, size: 0, mtime: 1)
            row.markChanged(.content, now: 5)
            try row.insert(db)
            let first = try #require(try since(row.inode, db))
            #expect(abs(first - Int64(Date().timeIntervalSince1970)) <= 2)
            // An old start stays while more changes pile up, through either kind of write.
            try db.execute(sql: "UPDATE item SET dirtySince = 1000 WHERE ino = ?", arguments: [row.inode])
            row.markChanged(.metadata, now: 6)
            try row.update(db)
            try ItemRow.touchFolders([row.inode], now: 7, db)
            #expect(try since(row.inode, db) == 1000)
            #expect(try PendingSince.oldest(db) == 1000)
            // A commit took the changes up to second 5,000 and the row is still dirty: what
            // waits is that new at most (a file written all day is not a day behind).
            try PendingSince.restart(row.inode, at: 5_000_000_000_000, db)
            #expect(try since(row.inode, db) == 5000)
            try PendingSince.restart(row.inode, at: 4_000_000_000_000, db)
            #expect(try since(row.inode, db) == 5000)
            try PendingSince.restart(clean.inode, at: 5_000_000_000_000, db)
            #expect(try since(clean.inode, db) == nil)
            // Committed: cleared, and the next change starts anew.
            row.dirtyFlags = []
            try row.update(db)
            #expect(try since(row.inode, db) == nil)
            #expect(try PendingSince.oldest(db) == nil)
            try ItemRow.touchFolders([row.inode], now: 8, db)
            #expect(try since(row.inode, db).map { $0 > 5000 } == true)
            // Ignored items never wait.
            try db.execute(sql: "UPDATE item SET ignored = 1 WHERE ino = ?", arguments: [row.inode])
            #expect(try PendingSince.oldest(db) == nil)
        }
    }
}
