import DatabaseMerge
import Foundation
import Testing

/// Merges that go through: each kind of table key, foreign keys, UNIQUE, triggers,
/// AUTOINCREMENT, exact values, WAL-mode inputs, header numbers, odd names.
@Suite struct MergeTests {
    @Test func rowidTableWithoutDeclaredKeyMergesByRowid() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z');",
            ours: "UPDATE t SET b = 'X' WHERE rowid = 1; INSERT INTO t VALUES (4, 'w');",
            theirs: "DELETE FROM t WHERE rowid = 2; UPDATE t SET b = 'Z' WHERE rowid = 3;"
        )
        let report = try fixture.merge()
        #expect(report == DatabaseMergeReport(inserted: 1, updated: 1, deleted: 0, tables: ["t"]))
        #expect(try fixture.rows("SELECT rowid, a, b FROM t ORDER BY rowid") == ["1|1|'X'", "3|3|'Z'", "4|4|'w'"])
        #expect(try fixture.strayFiles() == [])
    }

    @Test func integerPrimaryKey() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO notes VALUES (1, 'one'), (2, 'two'), (3, 'three');",
            ours: "INSERT INTO notes VALUES (10, 'ten'); DELETE FROM notes WHERE id = 1;",
            theirs: "INSERT INTO notes VALUES (20, 'twenty'); UPDATE notes SET title = 'TWO' WHERE id = 2;"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 1, updated: 0, deleted: 1, tables: ["notes"]))
        #expect(try fixture.rows("SELECT * FROM notes ORDER BY id") == ["2|'TWO'", "3|'three'", "10|'ten'", "20|'twenty'"])
    }

    /// Both sides' new rows got rowid 2; the key is (item, tag), so they are different rows.
    @Test func compositeKeyOfARowidTableIgnoresRowids() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE tags(item TEXT, tag TEXT, weight, PRIMARY KEY(item, tag)); INSERT INTO tags VALUES ('a', 'x', 1);",
            ours: "INSERT INTO tags VALUES ('b', 'y', 2); UPDATE tags SET weight = 5 WHERE item = 'a';",
            theirs: "INSERT INTO tags VALUES ('c', 'z', 3);"
        )
        #expect(try fixture.rows("SELECT rowid FROM tags WHERE item = 'b'", in: fixture.ours) == ["2"])
        #expect(try fixture.rows("SELECT rowid FROM tags WHERE item = 'c'", in: fixture.theirs) == ["2"])
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 1, updated: 1, deleted: 0, tables: ["tags"]))
        #expect(try fixture.rows("SELECT * FROM tags ORDER BY item, tag") == ["'a'|'x'|5", "'b'|'y'|2", "'c'|'z'|3"])
    }

    @Test func withoutRowidTable() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE kv(k TEXT PRIMARY KEY, v) WITHOUT ROWID; INSERT INTO kv VALUES ('a', 1), ('b', 2), ('c', 3);",
            ours: "UPDATE kv SET v = 20 WHERE k = 'b'; DELETE FROM kv WHERE k = 'c';",
            theirs: "INSERT INTO kv VALUES ('d', 4); UPDATE kv SET v = 10 WHERE k = 'a';"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 0, updated: 1, deleted: 1, tables: ["kv"]))
        #expect(try fixture.rows("SELECT * FROM kv") == ["'a'|10", "'b'|20", "'d'|4"])
    }

    @Test func foreignKeysBetweenRowsOfBothSides() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY, name);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent(id) ON DELETE CASCADE);
            INSERT INTO parent VALUES (1, 'p1'); INSERT INTO child VALUES (1, 1);
            """,
            ours: "PRAGMA foreign_keys = ON; INSERT INTO parent VALUES (2, 'p2'); INSERT INTO child VALUES (2, 2);",
            theirs: "PRAGMA foreign_keys = ON; INSERT INTO child VALUES (3, 1);"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 2, updated: 0, deleted: 0, tables: ["child", "parent"]))
        #expect(try fixture.rows("SELECT * FROM child ORDER BY id") == ["1|1", "2|2", "3|1"])
        #expect(try fixture.rows("PRAGMA foreign_key_check") == [])
    }

    /// Ours deleted a parent, whose child rows its cascade deleted: the deletes come from
    /// ours' rows, not from a cascade in the output (foreign keys are off while applying).
    @Test func cascadedDeletesComeFromOursRows() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) ON DELETE CASCADE);
            INSERT INTO parent VALUES (1), (2); INSERT INTO child VALUES (1, 1), (2, 1), (3, 2);
            """,
            ours: "PRAGMA foreign_keys = ON; DELETE FROM parent WHERE id = 1;",
            theirs: "INSERT INTO child VALUES (4, 2);"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 0, updated: 0, deleted: 3, tables: ["child", "parent"]))
        #expect(try fixture.rows("SELECT * FROM child ORDER BY id") == ["3|2", "4|2"])
    }

    @Test func uniqueColumnWithoutCollision() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT UNIQUE); INSERT INTO users VALUES (1, 'a'), (2, 'b');",
            ours: "UPDATE users SET email = 'c' WHERE id = 1;",
            theirs: "INSERT INTO users VALUES (3, 'a2');"
        )
        _ = try fixture.merge()
        #expect(try fixture.rows("SELECT * FROM users ORDER BY id") == ["1|'c'", "2|'b'", "3|'a2'"])
    }

    /// Triggers do not fire while ours' rows go in (their effects are in ours' rows already:
    /// one log row per note, one count per edit), and they are there and fire afterwards.
    @Test func triggerEffectsComeOnce() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE notes(id INTEGER PRIMARY KEY, body, edits INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE log(id INTEGER PRIMARY KEY, note, what);
            CREATE TRIGGER noteCreated AFTER INSERT ON notes BEGIN INSERT INTO log(note, what) VALUES (new.id, "created"); END;
            CREATE TRIGGER noteEdited AFTER UPDATE OF body ON notes BEGIN UPDATE notes SET edits = edits + 1 WHERE id = new.id; END;
            INSERT INTO notes(id, body) VALUES (1, 'one'), (2, 'two');
            """,
            ours: "INSERT INTO notes(id, body) VALUES (5, 'five'); UPDATE notes SET body = 'ONE' WHERE id = 1;",
            theirs: "UPDATE notes SET body = 'TWO' WHERE id = 2;"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 2, updated: 1, deleted: 0, tables: ["log", "notes"]))
        #expect(try fixture.rows("SELECT * FROM notes ORDER BY id") == ["1|'ONE'|1", "2|'TWO'|1", "5|'five'|0"])
        #expect(try fixture.rows("SELECT * FROM log ORDER BY id") == ["1|1|'created'", "2|2|'created'", "3|5|'created'"])
        #expect(try fixture.rows("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name") == ["'noteCreated'", "'noteEdited'"])
        try fixture.execute("UPDATE notes SET body = 'five!' WHERE id = 5", in: fixture.output)
        #expect(try fixture.rows("SELECT edits FROM notes WHERE id = 5") == ["1"])
    }

    /// Each counter is the larger of ours' and theirs'; a counter only ours has comes too.
    @Test func autoincrementCountersTakeTheLarger() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE a(id INTEGER PRIMARY KEY AUTOINCREMENT, v);
            CREATE TABLE b(id INTEGER PRIMARY KEY AUTOINCREMENT, v);
            CREATE TABLE c(id INTEGER PRIMARY KEY AUTOINCREMENT, v);
            INSERT INTO a(v) VALUES ('a1'), ('a2'); INSERT INTO b(v) VALUES ('b1');
            """,
            ours: "INSERT INTO a(v) VALUES ('a3'); DELETE FROM a WHERE id = 3; INSERT INTO a(v) VALUES ('a4'); INSERT INTO b(v) VALUES ('b2'); INSERT INTO c(v) VALUES ('c1');",
            theirs: "DELETE FROM a WHERE id = 2; INSERT INTO b(id, v) VALUES (10, 'b10'); DELETE FROM b WHERE id = 10;"
        )
        _ = try fixture.merge()
        #expect(try fixture.rows("SELECT name, seq FROM sqlite_sequence ORDER BY name") == ["'a'|4", "'b'|10", "'c'|1"])
        #expect(try fixture.rows("SELECT id, v FROM a ORDER BY id") == ["1|'a1'", "4|'a4'"])
        #expect(try fixture.rows("SELECT id, v FROM b ORDER BY id") == ["1|'b1'", "2|'b2'"])
    }

    /// Values compare exactly: 1 and 1.0 differ, NULL and an empty blob differ; text keys
    /// with NUL bytes or invalid UTF-8 come through byte for byte; a change both sides made
    /// alike is no conflict and not counted.
    @Test func valuesAreComparedAndCarriedExactly() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE t(id INTEGER PRIMARY KEY, v);
            INSERT INTO t VALUES (1, 1), (2, NULL), (3, x'00ff'), (4, 'a'), (6, '1');
            CREATE TABLE odd(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
            INSERT INTO odd VALUES (CAST(x'61006200' AS TEXT), 1), (CAST(x'ff' AS TEXT), 2);
            """,
            ours: """
                UPDATE t SET v = 1.0 WHERE id = 1; UPDATE t SET v = x'' WHERE id = 2; UPDATE t SET v = x'00fe' WHERE id = 3;
                UPDATE t SET v = 'b' WHERE id = 4; UPDATE t SET v = 1 WHERE id = 6;
                UPDATE odd SET v = 3 WHERE k = CAST(x'ff' AS TEXT); INSERT INTO odd VALUES (CAST(x'fe00' AS TEXT), 4);
                """,
            theirs: "UPDATE t SET v = 'b' WHERE id = 4; INSERT INTO t VALUES (5, NULL); UPDATE odd SET v = 5 WHERE k = CAST(x'61006200' AS TEXT);"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 1, updated: 5, deleted: 0, tables: ["odd", "t"]))
        #expect(try fixture.rows("SELECT * FROM t ORDER BY id") == ["1|1.0", "2|x''", "3|x'00fe'", "4|'b'", "5|NULL", "6|1"])
        #expect(try fixture.rows("SELECT hex(k), v FROM odd ORDER BY k") == ["'61006200'|5", "'FE00'|4", "'FF'|3"])
    }

    /// WAL-mode inputs: nothing is made beside them, they keep their bytes, and the output is
    /// still in WAL mode with no `-wal` or `-shm` beside it.
    @Test func walModeInputs() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a'), (2, 'b');",
            ours: "UPDATE t SET v = 'A' WHERE id = 1;",
            theirs: "INSERT INTO t VALUES (3, 'c');",
            wal: true
        )
        let before = try [fixture.base, fixture.ours, fixture.theirs].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        #expect(before.allSatisfy { $0[18] == 2 && $0[19] == 2 })
        #expect(try fixture.strayFiles() == [])
        _ = try fixture.merge()
        #expect(try fixture.strayFiles() == [])
        #expect(try [fixture.base, fixture.ours, fixture.theirs].map { try Data(contentsOf: URL(fileURLWithPath: $0)) } == before)
        let output = try Data(contentsOf: URL(fileURLWithPath: fixture.output))
        #expect(output[18] == 2 && output[19] == 2)
        #expect(try fixture.rows("SELECT * FROM t ORDER BY id") == ["1|'A'", "2|'b'", "3|'c'"])
    }

    @Test func generatedColumnsAreComputedNotCopied() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, a, b AS (a * 2), c AS (a + 1) STORED); INSERT INTO t(id, a) VALUES (1, 1), (2, 2);",
            ours: "UPDATE t SET a = 10 WHERE id = 1;",
            theirs: "INSERT INTO t(id, a) VALUES (3, 3);"
        )
        _ = try fixture.merge()
        #expect(try fixture.rows("SELECT id, a, b, c FROM t ORDER BY id") == ["1|10|20|11", "2|2|4|3", "3|3|6|4"])
    }

    @Test func headerNumbersSetOnOneSideAreKept() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make("CREATE TABLE t(x); PRAGMA user_version = 1;", ours: "PRAGMA user_version = 2;", theirs: "PRAGMA application_id = 7;")
        _ = try fixture.merge()
        #expect(try fixture.rows("PRAGMA user_version") == ["2"])
        #expect(try fixture.rows("PRAGMA application_id") == ["7"])
    }

    /// ANALYZE's statistics are advisory: theirs' are kept, whether or not ours has any.
    @Test func statisticsAreTheirs() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, v); CREATE INDEX tv ON t(v); INSERT INTO t VALUES (1, 'a'), (2, 'b');",
            ours: "INSERT INTO t VALUES (3, 'c');",
            theirs: "ANALYZE;"
        )
        #expect(try fixture.merge().inserted == 1)
        #expect(try fixture.rows("SELECT tbl, idx FROM sqlite_stat1 ORDER BY idx") == ["'t'|'tv'"])
    }

    /// Names with spaces and quotes, and a column named rowid (the rowid is then `_rowid_`).
    @Test func oddNames() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE "my ""odd"" table"("the key" INTEGER PRIMARY KEY, "va""lue");
            CREATE TABLE r(rowid, x);
            INSERT INTO "my ""odd"" table" VALUES (1, 'a'); INSERT INTO r(_rowid_, rowid, x) VALUES (1, 100, 'a'), (2, 200, 'b');
            """,
            ours: "UPDATE \"my \"\"odd\"\" table\" SET \"va\"\"lue\" = 'b'; UPDATE r SET x = 'B' WHERE _rowid_ = 2;",
            theirs: "INSERT INTO \"my \"\"odd\"\" table\" VALUES (2, 'c'); INSERT INTO r(_rowid_, rowid, x) VALUES (3, 300, 'c');"
        )
        #expect(try fixture.merge() == DatabaseMergeReport(inserted: 0, updated: 2, deleted: 0, tables: ["my \"odd\" table", "r"]))
        #expect(try fixture.rows("SELECT * FROM \"my \"\"odd\"\" table\" ORDER BY 1") == ["1|'b'", "2|'c'"])
        #expect(try fixture.rows("SELECT _rowid_, rowid, x FROM r ORDER BY 1") == ["1|100|'a'", "2|200|'B'", "3|300|'c'"])
    }

    /// Triggers come back in the order they were made, so those on one event fire as before.
    @Test func triggersKeepTheirFiringOrder() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE t(x); CREATE TABLE log(id INTEGER PRIMARY KEY, what);
            CREATE TRIGGER z AFTER INSERT ON t BEGIN INSERT INTO log(what) VALUES ('z'); END;
            CREATE TRIGGER a AFTER INSERT ON t BEGIN INSERT INTO log(what) VALUES ('a'); END;
            """,
            ours: "INSERT INTO t VALUES (1);"
        )
        _ = try fixture.merge()
        for path in [fixture.output, fixture.theirs] {
            try fixture.execute("DELETE FROM log; INSERT INTO t VALUES (2);", in: path)
        }
        #expect(try fixture.rows("SELECT what FROM log ORDER BY id") == fixture.rows("SELECT what FROM log ORDER BY id", in: fixture.theirs))
    }

    /// Six hundred columns: the comparison of two rows stays within SQLite's expression depth.
    @Test func aWideTable() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        let columns = (0..<600).map { "c\($0)" }
        try fixture.make(
            "CREATE TABLE w(id INTEGER PRIMARY KEY, \(columns.joined(separator: ", "))); INSERT INTO w(id, c599) VALUES (1, 'a'), (2, 'b');",
            ours: "UPDATE w SET c599 = 'A' WHERE id = 1;",
            theirs: "UPDATE w SET c0 = 'B' WHERE id = 2;"
        )
        #expect(try fixture.merge().updated == 1)
        #expect(try fixture.rows("SELECT id, c0, c599 FROM w ORDER BY id") == ["1|NULL|'A'", "2|'B'|'b'"])
    }

    @Test func sameInputsGiveTheSameBytes() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE a(id INTEGER PRIMARY KEY, v); CREATE TABLE b(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
            CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END;
            INSERT INTO a VALUES (1, 'x'), (2, 'y'); INSERT INTO b VALUES ('p', 1), ('q', 2);
            """,
            ours: "INSERT INTO a VALUES (3, 'z'); DELETE FROM b WHERE k = 'p'; UPDATE a SET v = 'X' WHERE id = 1;",
            theirs: "INSERT INTO b VALUES ('r', 3);"
        )
        _ = try fixture.merge()
        _ = try fixture.merge(into: fixture.directory + "/again.db")
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.output)) == Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/again.db")))
    }

    @Test func recognizesTheHeader() {
        #expect(DatabaseMerge.isDatabase(Array("SQLite format 3".utf8) + [0, 16, 0]))
        #expect(!DatabaseMerge.isDatabase(Array("SQLite format 3".utf8)))
        #expect(!DatabaseMerge.isDatabase(Array("SQLite format 2".utf8) + [0]))
    }
}
