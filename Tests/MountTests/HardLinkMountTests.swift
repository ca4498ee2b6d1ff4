import Foundation
import Testing

/// Hard links on real mounts, made and used by real programs (`ln`, `git clone --local`,
/// `cp -al`, `rsync --link-dest`), seen by a second device as one item with every name.
@Suite(.serialized) struct HardLinkMountTests {
    @Test func programsThatLinkWorkAndTheNamesTravel() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a", device: "laptop")
        let b = try await fixture.mount("b", device: "desktop")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
            # ln: one inode, two names, a write through one read through the other.
            mkdir \(a)/docs
            echo "first" > \(a)/docs/plan.txt
            ln \(a)/docs/plan.txt \(a)/plan-link.txt
            test "$(stat -c %i \(a)/docs/plan.txt)" = "$(stat -c %i \(a)/plan-link.txt)"
            test "$(stat -c %h \(a)/plan-link.txt)" = 2
            echo "second" >> \(a)/plan-link.txt
            test "$(cat \(a)/docs/plan.txt)" = "$(printf 'first\\nsecond')"
            fails ln \(a)/docs \(a)/docs-link 2>/dev/null
            # git clone --local links the objects of a repository in the same filesystem.
            git init -q \(a)/repo
            for i in 1 2 3; do echo "line $i" > \(a)/repo/f$i; done
            git -C \(a)/repo add . && git -C \(a)/repo commit -qm one
            git clone -q --local \(a)/repo \(a)/clone
            object=$(cd \(a)/repo/.git/objects && find . -type f -path './??/*' | head -1)
            test "$(stat -c %h \(a)/repo/.git/objects/$object)" = 2
            test "$(stat -c %i \(a)/repo/.git/objects/$object)" = "$(stat -c %i \(a)/clone/.git/objects/$object)"
            git -C \(a)/clone fsck --no-progress 2>&1 | (! grep -q .)
            # cp -al and rsync --link-dest make backups that share every unchanged file.
            cp -al \(a)/docs \(a)/docs-backup
            test "$(stat -c %h \(a)/docs/plan.txt)" = 3
            rsync -a --link-dest=\(a)/docs-backup \(a)/docs/ \(a)/docs-rsync/
            test "$(stat -c %h \(a)/docs/plan.txt)" = 4
            # Unlinking a name keeps the others.
            rm \(a)/docs/plan.txt
            test "$(stat -c %h \(a)/plan-link.txt)" = 3
            \(bin) sync --wait \(a)
            \(bin) status \(a) | grep -q 'pending uploads: 0'

            # The other device: every name, one item, one placeholder.
            waitfor '[ -e \(b)/docs-rsync/plan.txt ] && [ -e \(b)/clone/.git/HEAD ]'
            test "$(stat -c %i \(b)/plan-link.txt)" = "$(stat -c %i \(b)/docs-backup/plan.txt)"
            test "$(stat -c %h \(b)/plan-link.txt)" = 3
            test ! -e \(b)/docs/plan.txt
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/docs-rsync/plan.txt)" = placeholder
            test "$(cat \(b)/docs-backup/plan.txt)" = "$(printf 'first\\nsecond')"
            # Read through one name, local through every name.
            waitfor '[ "$(getfattr --only-values -n user.ubiqfs.state \(b)/docs-rsync/plan.txt)" = local ]'
            git -C \(b)/clone fsck --no-progress 2>&1 | (! grep -q .)
            test "$(git -C \(b)/clone log --format=%s)" = one
            diff -r \(a) \(b)

            # Evicted through one name: every name is a placeholder again, and reads back.
            \(bin) sync --wait \(b)
            setfattr -n user.ubiqfs.evict -v 1 \(b)/plan-link.txt
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/docs-backup/plan.txt)" = placeholder
            test "$(stat -c %b \(b)/docs-backup/plan.txt)" = 0
            test "$(cat \(b)/docs-rsync/plan.txt)" = "$(printf 'first\\nsecond')"

            # An edit through one name here and another there: one conflict, one copy.
            \(bin) pause \(a) && \(bin) pause \(b)
            echo "laptop" > \(a)/plan-link.txt
            echo "desktop" > \(b)/docs-backup/plan.txt
            \(bin) resume \(b) && \(bin) sync --wait \(b)
            \(bin) resume \(a) && \(bin) sync --wait \(a)
            \(bin) sync --wait \(b)
            waitfor 'diff -r \(a) \(b) >/dev/null' || { diff -r \(a) \(b) || true; ls -liR \(a) \(b) | grep -v '\\.git' >&2; \(bin) status \(a) >&2; \(bin) status \(b) >&2; exit 1; }
            test "$(cat \(a)/docs-rsync/plan.txt)" = desktop
            test "$(stat -c %h \(a)/plan-link.txt)" = 3
            test "$(grep -rl '^laptop$' \(a) | wc -l)" = 1
            # Every name removed: gone on both.
            rm \(a)/plan-link.txt \(a)/docs-backup/plan.txt \(a)/docs-rsync/plan.txt
            waitfor '[ ! -e \(b)/plan-link.txt ] && [ ! -e \(b)/docs-rsync/plan.txt ] && [ ! -e \(b)/docs-backup/plan.txt ]'
            diff -r \(a) \(b)
            """, timeout: 600)
    }

    /// A device of a release before links (format 2) stops at the first record of the
    /// upgraded container (format 5), with a clear line, and refuses to mount it again.
    @Test func aDeviceOfThePreviousFormatStopsWithAClearLine() async throws {
        let fixture = try MountFixture()
        let formatTwo = ["UBIQFS_FORMAT": "2"]
        let old = try await fixture.mount("old", environment: formatTwo)
        let bin = MountFixture.binary
        try await fixture.sh("""
            echo "made by the previous release" > \(old)/old.txt
            \(bin) sync --wait \(old)
            grep -q '"format":2' \(fixture.store)/*/container.json
            """)
        let new = try await fixture.mount("new")
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            grep -q '"format":5' \(fixture.store)/*/container.json
            ln \(new)/old.txt \(new)/new-name.txt
            \(bin) sync --wait \(new)
            echo "changed on the old device" > \(old)/old.txt
            waitfor '\(bin) status \(old) 2>&1 | grep -q "format 5 is not supported.*upgrade ubiqfs"'
            """)
        try await fixture.unmount(old)
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            fails env UBIQFS_FORMAT=2 \(bin) mount \(fixture.root)/old --store \(fixture.store) --state-dir \(fixture.root)/old.state 2> refused.txt
            grep -q 'the container has format 5; this ubiqfs supports 2; upgrade ubiqfs' refused.txt
            """)
        // Upgraded, the old device's change arrives, and it sees the link.
        let upgraded = try await fixture.mount("old")
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            test "$(stat -c %h \(upgraded)/new-name.txt)" = 2
            waitfor '[ "$(cat \(new)/new-name.txt)" = "changed on the old device" ]'
            """)
    }
}
