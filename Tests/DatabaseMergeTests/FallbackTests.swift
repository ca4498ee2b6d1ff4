import DatabaseMerge
import Foundation
import GRDB
import Testing

/// Merges that must not go through, each with its code and a message naming the table and
/// row; after each, no output and nothing else is left in the folder.
@Suite struct FallbackTests {
    static let notes = "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO notes VALUES (1, 'one'), (2, 'two');"

    /// Merges the fixture's inputs, expecting `code` and a message containing `message`.
    func expectFailure(_ fixture: DatabaseFixture, _ code: DatabaseMergeErrorCode, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        do {
            let report = try fixture.merge()
            Issue.record("merged (\(report)), expected \(code): \(message)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.message.contains(message), "\(error)", sourceLocation: sourceLocation)
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.output), sourceLocation: sourceLocation)
        #expect(try fixture.strayFiles() == [], sourceLocation: sourceLocation)
    }

    @Test func aColumnAddedOnOneSideIsASchemaChange() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "ALTER TABLE notes ADD COLUMN body TEXT;", theirs: "INSERT INTO notes VALUES (3, 'three');")
        try expectFailure(fixture, .schemaChanged, "schema differs between base and ours: table notes")
    }

    @Test func anIndexAddedOnOneSideIsASchemaChange() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, theirs: "CREATE INDEX byTitle ON notes(title);")
        try expectFailure(fixture, .schemaChanged, "schema differs between base and theirs: index byTitle")
    }

    @Test func userVersionSetDifferentlyOnBothSides() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "PRAGMA user_version = 2;", theirs: "PRAGMA user_version = 3;")
        try expectFailure(fixture, .schemaChanged, "user_version set to 2 in ours and to 3 in theirs")
    }

    @Test func aRowChangedOnBothSides() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "UPDATE notes SET title = 'uno' WHERE id = 1;", theirs: "UPDATE notes SET title = 'eins' WHERE id = 1;")
        try expectFailure(fixture, .conflict, "table notes: row (id=1) changed on both sides")
    }

    @Test func aKeyInsertedOnBothSides() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "INSERT INTO notes VALUES (5, 'five');", theirs: "INSERT INTO notes VALUES (5, 'fünf');")
        try expectFailure(fixture, .conflict, "table notes: row (id=5) inserted on both sides with different values")
    }

    @Test func aCompositeKeyInsertedOnBothSides() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE tags(item TEXT, tag TEXT, weight, PRIMARY KEY(item, tag));",
            ours: "INSERT INTO tags VALUES ('a', 'x', 1);", theirs: "INSERT INTO tags VALUES ('a', 'x', 2);"
        )
        try expectFailure(fixture, .conflict, "table tags: row (item='a', tag='x') inserted on both sides")
    }

    @Test func deletedInOursChangedInTheirs() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "DELETE FROM notes WHERE id = 2;", theirs: "UPDATE notes SET title = 'zwei' WHERE id = 2;")
        try expectFailure(fixture, .conflict, "table notes: row (id=2) deleted in ours and changed in theirs")
    }

    @Test func changedInOursDeletedInTheirs() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "UPDATE notes SET title = 'zwei' WHERE id = 2;", theirs: "DELETE FROM notes WHERE id = 2;")
        try expectFailure(fixture, .conflict, "table notes: row (id=2) changed in ours and deleted in theirs")
    }

    @Test func aUniqueValueTakenOnTheOtherSide() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT UNIQUE); INSERT INTO users VALUES (1, 'a');",
            ours: "UPDATE users SET email = 'x' WHERE id = 1;", theirs: "INSERT INTO users VALUES (2, 'x');"
        )
        try expectFailure(fixture, .conflict, "table users: row (id=1) of ours breaks a constraint: UNIQUE constraint failed: users.email")
    }

    /// The table's own ON CONFLICT REPLACE would delete theirs' row silently; the merge's
    /// statements override it.
    @Test func aUniqueValueTakenUnderOnConflictReplace() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            "CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE);",
            ours: "INSERT INTO users VALUES (1, 'x');", theirs: "INSERT INTO users VALUES (2, 'x');"
        )
        try expectFailure(fixture, .conflict, "table users: row (id=1) of ours breaks a constraint: UNIQUE")
    }

    @Test func aVirtualTable() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make("CREATE VIRTUAL TABLE search USING fts5(body); INSERT INTO search VALUES ('hello');", ours: "INSERT INTO search VALUES ('world');")
        try expectFailure(fixture, .unsupported, "table search is a virtual table")
    }

    @Test func aNullInADeclaredPrimaryKey() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make("CREATE TABLE t(k TEXT PRIMARY KEY, v); INSERT INTO t VALUES ('a', 1);", ours: "INSERT INTO t VALUES (NULL, 2);")
        try expectFailure(fixture, .unsupported, "table t: a row of ours has NULL in its primary key")
    }

    /// Ours deleted a parent; theirs added a child of it.
    @Test func aNewForeignKeyViolation() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id));
            INSERT INTO parent VALUES (1), (2);
            """,
            ours: "DELETE FROM parent WHERE id = 1;", theirs: "INSERT INTO child VALUES (7, 1);"
        )
        try expectFailure(fixture, .integrity, "table child: row (id=7) refers to a missing row of parent")
    }

    /// The same in a WITHOUT ROWID child table, which `foreign_key_check` names no row of.
    @Test func aNewForeignKeyViolationInAWithoutRowidTable() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE parent(name TEXT PRIMARY KEY);
            CREATE TABLE child(a TEXT, b TEXT, parent TEXT REFERENCES parent, PRIMARY KEY(a, b)) WITHOUT ROWID;
            INSERT INTO parent VALUES ('p'), ('q'); INSERT INTO child VALUES ('x', 'y', 'q');
            """,
            ours: "INSERT INTO child VALUES ('x', 'z', 'p');", theirs: "DELETE FROM parent WHERE name = 'p';"
        )
        try expectFailure(fixture, .integrity, "table child: row (a='x', b='z') refers to a missing row of parent")
    }

    /// A violation the app already had (it never turns foreign keys on) is carried over.
    @Test func aViolationBothSidesHadIsNoReasonToFail() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id));
            INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1, 1), (2, 99);
            """,
            ours: "INSERT INTO child VALUES (3, 1);", theirs: "INSERT INTO parent VALUES (2);"
        )
        #expect(try fixture.merge().inserted == 1)
        #expect(try fixture.rows("PRAGMA foreign_key_check") == ["'child'|2|'parent'|0"])
    }

    /// A collation the app defines (Anki's `unicase`) on a key: the merge cannot compare keys.
    @Test func aCollationOfTheAppsOwn() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        var configuration = DatabaseFixture.configuration
        configuration.prepareDatabase { db in
            db.add(collation: DatabaseCollation("unicase") { $0.lowercased() < $1.lowercased() ? .orderedAscending : $0.lowercased() == $1.lowercased() ? .orderedSame : .orderedDescending })
        }
        let create = try DatabaseQueue(path: fixture.base, configuration: configuration)
        try create.inDatabase { db in try db.execute(sql: "CREATE TABLE decks(name TEXT PRIMARY KEY COLLATE unicase, v); INSERT INTO decks VALUES ('a', 1);") }
        try create.close()
        try fixture.branch()
        let ours = try DatabaseQueue(path: fixture.ours, configuration: configuration)
        try ours.inDatabase { db in try db.execute(sql: "INSERT INTO decks VALUES ('b', 2)") }
        try ours.close()
        try expectFailure(fixture, .unsupported, "a collation of the database's own app")
    }

    @Test func notADatabase() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes)
        try Data("not a database, just text that is long enough to fill a header of one hundred bytes ......".utf8)
            .write(to: URL(fileURLWithPath: fixture.ours))
        try expectFailure(fixture, .notDatabase, "ours (\(fixture.ours)) is not an SQLite 3 database")
    }

    @Test func anExistingOutputIsLeftAlone() throws {
        let fixture = try DatabaseFixture()
        defer { fixture.remove() }
        try fixture.make(Self.notes, ours: "INSERT INTO notes VALUES (3, 'three');")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: fixture.output))
        #expect(throws: DatabaseMergeError.self) { try fixture.merge() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.output)) == Data("mine".utf8))
        #expect(try fixture.strayFiles() == [])
    }
}
