import Foundation
import Testing

/// Two devices edit one text file with real programs (issue 40): `sed -i` on lines apart
/// merges into one file on both mounts; each edit is a version; status and watch say so.
@Suite struct MergeMountTests {
    /// Two mounts of one container, and the script `script(a, b, binary)` run beside them
    /// (with `waitfor`); both are unmounted after it, whatever happens.
    static func onTwoMounts(_ script: (String, String, String) -> String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        _ = try await fixture.sh(MultiDeviceMountTests.helpers + "\n" + script(a, b, MountFixture.binary), sourceLocation: sourceLocation)
    }

    @Test func sedOnLinesApartOnTwoMountsMerges() async throws {
        try await Self.onTwoMounts { a, b, bin in """
            seq 1 20 | sed 's/^/line /' > \(a)/notes.md
            \(bin) sync --wait \(a)
            waitfor '[ -s \(b)/notes.md ] && [ "$(wc -l < \(b)/notes.md)" = 20 ]'
            \(bin) watch \(b) > watch.log 2>&1 &
            watcher=$!
            trap "kill $watcher 2>/dev/null || true" EXIT
            # b is away while both edit: a line 3, b line 17 (sed -i: a new file renamed over).
            \(bin) pause \(b)
            sed -i 's/^line 3$/line 3, edited on a/' \(a)/notes.md
            \(bin) sync --wait \(a)
            sed -i 's/^line 17$/line 17, edited on b/' \(b)/notes.md
            \(bin) resume \(b)
            \(bin) sync --wait \(b)
            seq 1 20 | sed 's/^/line /; s/^line 3$/line 3, edited on a/; s/^line 17$/line 17, edited on b/' > expected
            cmp expected \(b)/notes.md
            \(bin) sync --wait \(a)
            waitfor 'cmp -s expected \(a)/notes.md'
            test "$(ls \(a) | wc -l)" = 1 && test "$(ls \(b) | wc -l)" = 1
            \(bin) status \(b) | grep -q "merged:          notes.md: merged with a's version"
            waitfor 'grep -q "\\"event\\":\\"merged\\"" watch.log'
            \(bin) versions \(a)/notes.md > versions.txt
            grep -qE '^[0-9]+\\.1 .* b  \\(an edit merged into [0-9]+\\)' versions.txt
            grep -q 'merged: text of' versions.txt
            # The same lines on both sides: a conflict copy, as before, saying why.
            \(bin) pause \(b)
            sed -i 's/^line 10$/line 10 from a/' \(a)/notes.md && \(bin) sync --wait \(a)
            sed -i 's/^line 10$/line 10 from b/' \(b)/notes.md
            \(bin) resume \(b) && \(bin) sync --wait \(b)
            ls \(b) | grep -q 'notes (conflict from b '
            \(bin) status \(b) | grep -q 'not merged: both changed the same lines'
            """
        }
    }

    /// The same with a program's database, edited by `sqlite3` itself (WAL mode, as apps
    /// keep theirs): rows added, changed and deleted on each side merge into one database
    /// that `sqlite3` checks whole; one row changed on both keeps the copy.
    @Test func sqlite3OnTwoMountsMergesRowsChangedOnOneSideEach() async throws {
        try await Self.onTwoMounts { a, b, bin in """
            \(bin) merge \(a) --sqlite on | grep -q 'sqlite: on'
            sqlite3 \(a)/app.db "PRAGMA journal_mode=WAL; CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL); \
                CREATE TABLE tags(note INTEGER REFERENCES notes(id), tag TEXT, PRIMARY KEY(note, tag)) WITHOUT ROWID; \
                INSERT INTO notes VALUES (1,'one'),(2,'two'),(3,'three'); INSERT INTO tags VALUES (1,'x'),(2,'y');" > /dev/null
            test ! -e \(a)/app.db-wal
            \(bin) sync --wait \(a)
            waitfor '[ -e \(b)/app.db ] && [ "$(\(bin) merge \(b) | grep sqlite)" = "sqlite: on" ]'
            \(bin) pause \(b)
            sqlite3 \(a)/app.db "INSERT INTO notes VALUES (10,'from a'); UPDATE notes SET body='two, a' WHERE id=2; INSERT INTO tags VALUES (10,'a');"
            \(bin) sync --wait \(a)
            sqlite3 \(b)/app.db "INSERT INTO notes VALUES (20,'from b'); DELETE FROM tags WHERE note=1; DELETE FROM notes WHERE id=1;"
            \(bin) resume \(b)
            \(bin) sync --wait \(b)
            \(bin) sync --wait \(a)
            printf '2 two, a\n3 three\n10 from a\n20 from b\n2 y\n10 a\n' > want
            for side in \(a) \(b); do
                sqlite3 -separator ' ' $side/app.db 'SELECT * FROM notes ORDER BY id; SELECT note, tag FROM tags ORDER BY note' > got
                cmp want got
                test "$(sqlite3 $side/app.db 'PRAGMA integrity_check; PRAGMA foreign_key_check')" = ok
                test "$(ls $side | grep -c conflict)" = 0
            done
            \(bin) status \(b) | grep -q "merged:          app.db: merged with a's version"
            \(bin) versions \(a)/app.db | grep -q 'merged: sqlite of'
            # One row changed on both: the copy, as before, saying why.
            \(bin) pause \(b)
            sqlite3 \(a)/app.db "UPDATE notes SET body='a wins?' WHERE id=3" && \(bin) sync --wait \(a)
            sqlite3 \(b)/app.db "UPDATE notes SET body='b wins?' WHERE id=3"
            \(bin) resume \(b) && \(bin) sync --wait \(b)
            ls \(b) | grep -q 'app (conflict from b '
            \(bin) status \(b) | grep -q 'not merged: .*changed on both sides'
            for file in \(b)/app*.db; do test "$(sqlite3 "$file" 'PRAGMA integrity_check')" = ok; done
            """
        }
    }

    /// A `.ubiqfsnomerge` made with `touch` keeps its folder's files out of merges on every
    /// device: the same `sed` edits that merge a note at the top make a copy inside it, and
    /// the conflict says which rule.
    @Test func touchingUbiqfsnomergeKeepsAFolderOutOfMerges() async throws {
        try await Self.onTwoMounts { a, b, bin in """
            mkdir \(a)/code
            touch \(a)/code/.ubiqfsnomerge
            for file in notes.md code/main.c; do seq 1 20 | sed 's/^/line /' > \(a)/$file; done
            \(bin) sync --wait \(a)
            waitfor '[ "$(wc -l < \(b)/code/main.c 2>/dev/null)" = 20 ] && [ "$(wc -l < \(b)/notes.md 2>/dev/null)" = 20 ]'
            \(bin) pause \(b)
            for file in notes.md code/main.c; do sed -i 's/^line 3$/line 3, edited on a/' \(a)/$file; done
            \(bin) sync --wait \(a)
            for file in notes.md code/main.c; do sed -i 's/^line 17$/line 17, edited on b/' \(b)/$file; done
            \(bin) resume \(b)
            \(bin) sync --wait \(b)
            # Outside the folder: merged, no copy (the control).
            grep -q 'line 3, edited on a' \(b)/notes.md
            grep -q 'line 17, edited on b' \(b)/notes.md
            test "$(ls \(b) | grep -c conflict)" = 0
            # Inside: a's version keeps the name, b's is the copy, and status says why.
            grep -q 'line 3, edited on a' \(b)/code/main.c
            test "$(grep -c 'edited on b' \(b)/code/main.c)" = 0
            ls \(b)/code | grep -q 'main (conflict from b '
            \(bin) status \(b) | grep -qF 'not merged: merging is off for it: "*" in /code/.ubiqfsnomerge'
            \(bin) sync --wait \(a)
            waitfor 'ls \(a)/code | grep -q "main (conflict from b "'
            """
        }
    }
}
