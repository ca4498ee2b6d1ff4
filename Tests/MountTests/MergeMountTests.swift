import Foundation
import Testing

/// Two devices edit one text file with real programs (issue 40): `sed -i` on lines apart
/// merges into one file on both mounts; each edit is a version; status and watch say so.
@Suite struct MergeMountTests {
    @Test func sedOnLinesApartOnTwoMountsMerges() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let b = try await fixture.mount("b")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
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
            """)
    }
}
