import DatabaseMerge
import Foundation
import Testing

/// A database of tens of MiB with a few changes on each side: the merge works in SQL on the
/// attached files, not on tables loaded into memory, and takes moments.
@Suite struct LargeDatabaseTests {
    @Test func aFewChangesInALargeDatabase() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT UNIQUE, body BLOB);
            CREATE TABLE links(a INTEGER, b INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
            INSERT INTO items SELECT i, printf('item %08d', i), zeroblob(100) FROM n;
            INSERT INTO links SELECT id, id + 1 FROM items;
            """,
            ours: "UPDATE items SET body = x'01' WHERE id % 20000 = 0; DELETE FROM links WHERE a % 50000 = 0;",
            theirs: "INSERT INTO items(name) VALUES ('new 1'), ('new 2'); INSERT INTO links VALUES (0, 1);"
        )
        let size = try FileManager.default.attributesOfItem(atPath: fixture.base)[.size] as? Int ?? 0
        #expect(size > 20 << 20)
        let start = ContinuousClock.now
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 0, updated: 10, deleted: 4, tables: ["items", "links"]))
        print("LargeDatabaseTests: merged \(size >> 20) MiB in \(ContinuousClock.now - start)")
        #expect(try fixture.rows("SELECT count(*), sum(body = x'01') FROM items") == ["200002|10"])
    }
}
