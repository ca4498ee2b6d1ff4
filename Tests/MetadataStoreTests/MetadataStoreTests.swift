import Foundation
import GRDB
import Inodes
import Synchronization
import Testing
import ItemModel
@testable import MetadataStore

@Suite struct MetadataStoreTests {
    func makeStore() throws -> MetadataStore {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-md-\(UUID().uuidString).db").path
        return try MetadataStore(path: path)
    }

    func file(_ name: String, parent: Inode = Inode.root) -> ItemRow {
        ItemRow(id: .random(), parent: parent, name: ByteString(name), kind: .file, mode: 0o644, uid: 0, gid: 0, size: 0, mtime: 1)
    }

    /// Files named PREFIX0, PREFIX1... in the root; their inodes.
    func insertFiles(_ count: Int, named prefix: String, into store: MetadataStore) throws -> [Inode] {
        try store.write { db in
            try (0..<count).map { index in
                var row = file("\(prefix)\(index)")
                try row.insert(db)
                return row.inode
            }
        }
    }

    @Test func rootExistsWithInodeOne() throws {
        let store = try makeStore()
        let root = try store.read { db in try ItemRow.find(ino: Inode.root, db) }
        #expect(root?.itemID == .root)
        #expect(root?.itemKind == .directory)
    }

    @Test func oneLiveNamePerFolder() throws {
        let store = try makeStore()
        try store.write { db in
            var a = file("same")
            try a.insert(db)
            a.deleted = true
            try a.update(db)
            var b = file("same")
            try b.insert(db)
        }
        #expect(throws: MetadataError.self) {
            try store.write { db in
                var c = file("same")
                try c.insert(db)
            }
        }
    }

    @Test func inodesAreStableAcrossReopen() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-md-\(UUID().uuidString).db").path
        let ino = try MetadataStore(path: path).write { db -> Inode in
            var row = file("keep")
            try row.insert(db)
            return row.inode
        }
        let again = try MetadataStore(path: path)
        #expect(try again.read { db in try ItemRow.child(of: Inode.root, named: ByteString("keep"), db)?.inode } == ino)
    }

    @Test func childrenComeInInodeOrderAfterAnOffset() throws {
        let store = try makeStore()
        let inos = try insertFiles(10, named: "f", into: store)
        let page = try store.read { db in try ItemRow.children(of: Inode.root, after: inos[3], limit: 4, db) }
        #expect(page.map(\.inode) == Array(inos[4..<8]))
    }

    @Test func dirtyRowsAndGenerations() throws {
        let store = try makeStore()
        try store.durableWrite { db in
            var row = file("x")
            row.markChanged([.metadata, .content], now: 5)
            try row.insert(db)
            #expect(row.changeGen == 1)
            #expect(row.dirtyFlags == [.metadata, .content])
        }
        #expect(try store.read { db in try ItemRow.dirtyRows(db).count } == 1)
    }

    @Test func namesKeepEveryByte() throws {
        let store = try makeStore()
        let raw = ByteString([0x6e, 0x0a, 0xff, 0xc3, 0xa9])
        try store.write { db in
            var row = file("placeholder")
            row.itemName = raw
            try row.insert(db)
        }
        #expect(try store.read { db in try ItemRow.child(of: Inode.root, named: raw, db)?.itemName } == raw)
    }

    @Test func baseSnapshotsRoundTrip() throws {
        let store = try makeStore()
        let item = ItemSnapshot(id: .random(), parent: .root, name: ByteString("n"), kind: .directory, mode: 0o755, mtime: 3, size: 0)
        try store.write { db in try BaseSnapshots.set(item, seq: 4, db) }
        #expect(try store.read { db in try BaseSnapshots.find(item.id, db) } == item)
        try store.write { db in try BaseSnapshots.remove(item.id, db) }
        #expect(try store.read { db in try BaseSnapshots.all(db) }.isEmpty)
    }

    @Test func xattrsAreRowsOfTheirOwnAndGoWithTheItem() throws {
        let store = try makeStore()
        let ino = try store.write { db -> Inode in
            var item = file("tagged")
            try item.insert(db)
            try StoredXattrs.set(item.inode, name: "user.b", value: Data([2, 2]), db)
            try StoredXattrs.set(item.inode, name: "user.a", value: Data([1]), db)
            try StoredXattrs.set(item.inode, name: "user.a", value: Data([1, 1, 1]), db)
            return item.inode
        }
        try store.read { db throws in
            #expect(try StoredXattrs.names(of: ino, db) == ["user.a", "user.b"])
            #expect(try StoredXattrs.value(of: ino, named: "user.a", db) == Data([1, 1, 1]))
            #expect(try StoredXattrs.totalSize(of: ino, db) == 6 + 3 + 6 + 2)
        }
        try store.write { db throws in
            #expect(try StoredXattrs.remove(ino, name: "user.b", db))
            #expect(try !StoredXattrs.remove(ino, name: "user.b", db))
            try StoredXattrs.replace(ino, with: ["user.c": Data([3])], db)
            #expect(try StoredXattrs.all(of: ino, db) == ["user.c": Data([3])])
            _ = try ItemRow.deleteOne(db, key: ino)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM xattr") == 0)
        }
    }

    /// A state dir from before v5 keeps its attributes: the JSON column becomes rows.
    @Test func migrationMovesXattrsOutOfTheJSONColumn() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-md-\(UUID().uuidString).db").path
        do {
            let pool = try DatabasePool(path: path)
            try MetadataStore.migrator.migrate(pool, upTo: "v4: special files")
            try pool.write { db in
                try db.execute(sql: """
                    INSERT INTO item (id, parent, name, kind, mode, uid, gid, size, mtime, ctime, atime, content, baseSeq, dirty, deleted, changeGen, xattrs)
                    VALUES ('0123456789abcdef0123456789abcdef', 1, X'66', 'file', 420, 0, 0, 0, 1, 1, 1, 0, 3, 0, 0, 0, ?)
                    """, arguments: [Data(#"{"user.color":"Ymx1ZQ==","user.n":""}"#.utf8)])
            }
        }
        let store = try MetadataStore(path: path)
        try store.read { db throws in
            let ino = try #require(try ItemRow.find(id: ItemID("0123456789abcdef0123456789abcdef"), db)).inode
            #expect(try StoredXattrs.all(of: ino, db) == ["user.color": Data("blue".utf8), "user.n": Data()])
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE xattrs IS NOT NULL") == 0)
        }
    }

    /// A change held for a merge by v18 (a NUL before the path, which GRDB's binding cut to
    /// an empty text) is still held for its merge after the upgrade; a writer's hold stays one.
    @Test func aMergeHeldByAnOlderVersionStaysHeldForItsMerge() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-md-\(UUID().uuidString).db").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let operation = try JSONEncoder().encode(JournalOperation.delete(ItemID("0123456789abcdef0123456789abcdef")))
        do {
            let pool = try DatabasePool(path: path)
            try MetadataStore.migrator.migrate(pool, upTo: "v18: pending merges")
            try pool.write { db in
                for (id, waitingFor) in [("0123456789abcdef0123456789abcdef", "\u{0}/notes.md"), ("fedcba9876543210fedcba9876543210", "/log.txt")] {
                    try db.execute(
                        sql: "INSERT INTO held(id, seq, operation, device, time, waitingFor) VALUES (?, 3, ?, 'a', 1, ?)",
                        arguments: [id, operation, waitingFor])
                }
                // What v18 stored: the text up to the NUL.
                #expect(try String.fetchAll(db, sql: "SELECT waitingFor FROM held ORDER BY id") == ["", "/log.txt"])
            }
        }
        let store = try MetadataStore(path: path)
        try store.read { db throws in
            let held = try HeldChanges.all(db).sorted { $0.waitingFor < $1.waitingFor }
            #expect(held.map(\.isMerge) == [true, false] && held.map(\.waitingFor) == ["", "/log.txt"])
        }
    }

    /// A folder's link count is read after every change in it: it must not visit the files.
    @Test func subfolderCountsUseTheirOwnIndex() throws {
        let store = try makeStore()
        try store.write { db in
            var folder = file("folder")
            folder.kind = ItemKind.directory.rawValue
            try folder.insert(db)
            for i in 0..<5 {
                var child = file("f\(i)", parent: folder.inode)
                try child.insert(db)
            }
            var sub = file("sub", parent: folder.inode)
            sub.kind = ItemKind.directory.rawValue
            try sub.insert(db)
            #expect(try ItemRow.subfolderCount(folder.inode, db) == 1)
            let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT count(*) FROM item WHERE parent = ? AND deleted = 0 AND kind = 'directory'", arguments: [folder.inode])
            #expect(plan.map { $0["detail"] as String }.joined().contains("INDEX item_subfolders"))
        }
    }

    /// Rows are read by column position and written by hand: every column must survive both,
    /// NULLs and empty blobs included, and read the same as GRDB's by-name decoding.
    @Test func rowsRoundTripThroughTheHandWrittenStatements() throws {
        let store = try makeStore()
        var full = file("full \u{1}")
        full.target = Data([0, 1, 2])
        full.blocks = Data("[]".utf8)
        full.pinned = true
        full.rdev = -5
        full.size = 1 << 40
        full.mtime = -3
        full.ctime = 7
        full.atime = 9
        full.mode = 0o7777
        full.uid = 4_000_000_000
        full.gid = 12
        full.content = ContentState.local.rawValue
        full.baseSeq = 42
        full.dirty = 3
        full.changeGen = 8
        var bare = file("")
        bare.name = Data()
        var numbered = file("numbered")
        numbered.ino = 1_000
        try store.write { db in
            try full.insert(db)
            try bare.insert(db)
            try numbered.insert(db)
        }
        #expect(numbered.inode == 1_000)
        for row in [full, bare, numbered] {
            try store.read { db throws in
                #expect(try ItemRow.find(ino: row.inode, db) == row)
                #expect(try ItemRow.find(id: row.itemID, db) == row)
                #expect(try ItemRow.child(of: Inode.root, named: row.itemName, db) == row)
                #expect(try ItemRow.fetchOne(db, sql: "SELECT * FROM item WHERE ino = ?", arguments: [row.inode]) == row)
            }
        }
        #expect(try store.read { db in try ItemRow.children(of: Inode.root, after: 0, limit: 10, db) } == [full, bare, numbered])

        var changed = full
        changed.parent = nil
        changed.target = nil
        changed.pinned = false
        changed.deleted = true
        changed.itemName = ByteString("renamed")
        try store.write { db in try changed.update(db) }
        #expect(try store.readUnisolated { db in try ItemRow.find(ino: full.inode, db) } == changed)

        var missing = file("missing")
        missing.ino = 99_999
        #expect(throws: MetadataError.self) { try store.write { db in try missing.update(db) } }
    }

    /// `read` sees one snapshot for its whole body; `readUnisolated` sees each statement's
    /// own, so it sees a write committed between two of its statements.
    @Test func readsSeeSnapshotsAsDocumented() throws {
        let store = try makeStore()
        func count(_ db: Database) throws -> Int { try Int.fetchOne(db, sql: "SELECT count(*) FROM item") ?? 0 }
        var added = 0
        let isolated = try store.read { db in
            let before = try count(db)
            try store.write { db in
                var row = file("during read \(added)")
                try row.insert(db)
            }
            added += 1
            return (before, try count(db))
        }
        #expect(isolated.0 == isolated.1)
        let unisolated = try store.readUnisolated { db in
            let before = try count(db)
            try store.write { db in
                var row = file("during unisolated read")
                try row.insert(db)
            }
            return (before, try count(db))
        }
        #expect(unisolated.1 == unisolated.0 + 1)
        #expect(try store.read(count) == unisolated.1)
    }

    /// Reader connections are shared by threads and reused; many at once all get answers.
    @Test func concurrentReadersAllSeeTheCommittedRows() throws {
        let store = try makeStore()
        let inos = try insertFiles(50, named: "r", into: store)
        let found = Mutex<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 400) { index in
            let ino = inos[index % inos.count]
            if (try? store.readUnisolated({ db in try ItemRow.find(ino: ino, db) })) != nil {
                found.withLock { $0 += 1 }
            }
        }
        #expect(found.withLock { $0 } == 400)
    }

    /// A repack's moves reach a thumbnail's packed blob as they reach content (format 3).
    @Test func blobMovesRelocateThumbnails() throws {
        let store = try makeStore()
        let (from, to) = (String(repeating: "a", count: 32), String(repeating: "b", count: 32))
        let hash = String(repeating: "c", count: 64)
        let picture = BlockReference(hash: hash, length: 100, pack: from, offset: 40, stored: 128)
        var item = ItemSnapshot(id: .random(), parent: .root, name: ByteString("photo.jpg"), kind: .file, mode: 0o644, mtime: 1, size: 0, blocks: [])
        item.thumbnails = [Thumbnail(size: 256, blocks: [picture])]
        try store.write { db in try BaseSnapshots.set(item, seq: 1, db) }
        let move = BlobMove(hash: hash, length: 100, from: from, pack: to, offset: 8)
        _ = try store.write { db in try BlobRelocations.apply([move], db) }
        let moved = try store.read { db in try BaseSnapshots.find(item.id, db) }
        #expect(moved?.thumbnails?.first?.blocks == [BlockReference(hash: hash, length: 100, pack: to, offset: 8, stored: 128)])
        #expect(moved?.namedBlocks.compactMap(\.pack) == [to])
    }
}
