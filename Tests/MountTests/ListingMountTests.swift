import Foundation
import Testing

/// What listing a folder costs in kernel requests, counted by the daemon itself
/// (`status --json`, `kernelRequests`).
@Suite struct ListingMountTests {
    /// `ls -l` and file managers list a folder, then lstat every entry. The listing
    /// carries every entry's attributes (readdirplus), so the lstats cost nothing: not a
    /// lookup per entry. The control: stats of names in a folder never listed each cost one.
    @Test func aViewOfAFolderCostsNoLookupPerEntry() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir \(mnt)/viewed \(mnt)/named
            (cd \(mnt)/viewed && seq 1 2000 | sed s/^/photo-/ | xargs touch)
            (cd \(mnt)/named && seq 1 2000 | sed s/^/photo-/ | xargs touch)
            \(bin) sync \(mnt) --wait
            """)
        try await fixture.unmount(mnt)
        // A second device: the kernel knows none of these names yet. Its first pull done
        // first: the invalidations of the names it applies, sent after, would drop
        // entries a listing made meanwhile (under load they lagged, 2,001 lookups).
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            \(bin) sync \(b) --wait
            sleep 1
            counts() { \(bin) status \(b) --json | python3 -c "import json, sys; r = json.load(sys.stdin)[\\"kernelRequests\\"]; print(r[\\"lookup\\"], r[\\"readdirplus\\"])"; }
            read lookups listings < <(counts)
            python3 -c "
            import os, sys
            names = os.listdir(sys.argv[1])
            assert len(names) == 2000, len(names)
            for name in names:
                os.lstat(os.path.join(sys.argv[1], name))
            " \(b)/viewed
            read lookups2 listings2 < <(counts)
            echo "view: $((lookups2 - lookups)) lookups, $((listings2 - listings)) readdirplus"
            test $((listings2 - listings)) -gt 0
            test $((lookups2 - lookups)) -le 20
            # The control: stats by name, with no listing before them.
            (cd \(b)/named && seq 1 2000 | sed s/^/photo-/ | xargs stat -c %s > /dev/null)
            read lookups3 listings3 < <(counts)
            echo "stats by name: $((lookups3 - lookups2)) lookups"
            test $((lookups3 - lookups2)) -ge 2000
            """)
    }
}
