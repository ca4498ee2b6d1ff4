import Foundation
import Testing

/// Items that stay on this device, on real mounts of two devices: a build folder, a
/// `node_modules` unpacked by tar and a `.nosync` folder never reach the other device nor
/// the store; what moves out of an ignored folder arrives; a `.ubiqfsignore` edited on one
/// device applies on the other; `--ignore-file` adds this device's own patterns.
@Suite(.serialized) struct IgnoreMountTests {
    @Test func ignoredItemsStayOnTheirDevice() async throws {
        let fixture = try MountFixture()
        let ignoreFile = fixture.root + "/device-ignores"
        try Data("*.secret\n".utf8).write(to: URL(fileURLWithPath: ignoreFile))
        let a = try await fixture.mount("a", device: "laptop")
        let b = try await fixture.mount("b", device: "desktop", extra: ["--ignore-file", ignoreFile])
        let (bin, store, root) = (MountFixture.binary, fixture.store, fixture.root)
        try await fixture.sh("""
            \(MultiDeviceMountTests.helpers)
            state() { getfattr --only-values -n user.ubiqfs.state "$1"; }
            printf 'build/\\nnode_modules/\\n*.o\\n' > \(a)/.ubiqfsignore
            mkdir -p \(a)/proj/src \(a)/proj/build
            echo 'int main(void) { return 0; }' > \(a)/proj/src/main.c
            for i in $(seq 1 50); do echo "object $i" > \(a)/proj/build/ignored-artifact-$i.o; done
            echo 'the report' > \(a)/proj/build/report.txt
            # A package tree unpacked by tar, as npm would leave it.
            mkdir -p \(root)/pkg/left-pad-marker && echo 'module.exports = 1' > \(root)/pkg/left-pad-marker/index.js
            mkdir \(a)/proj/node_modules && tar -C \(root)/pkg -cf - . | tar -C \(a)/proj/node_modules -xf -
            mkdir \(a)/scratch.nosync && echo 'notes to self' > \(a)/scratch.nosync/nosync-scratch-note
            test "$(state \(a)/proj/build/ignored-artifact-7.o)" = ignored
            test "$(state \(a)/proj/node_modules/left-pad-marker/index.js)" = ignored
            test "$(state \(a)/scratch.nosync/nosync-scratch-note)" = ignored
            test "$(getfattr --only-values -n user.ubiqfs.ignored \(a)/proj/build)" = 1
            \(bin) sync --wait \(a)
            \(bin) status \(a) | grep -q 'pending uploads: 0'
            \(bin) status \(a) | grep -q 'ignored:         57 '
            fails setfattr -n user.ubiqfs.evict -v 1 \(a)/proj/build/report.txt 2>/dev/null
            fails \(bin) evict \(a)/proj/build/report.txt 2> err
            grep -q "is ignored, and stays on this device" err
            # The command line: ignore and unignore.
            mkdir \(a)/drafts && echo 'first draft' > \(a)/drafts/d.txt
            \(bin) ignore \(a)/drafts
            test "$(state \(a)/drafts/d.txt)" = ignored
            \(bin) unignore \(a)/drafts
            test "$(state \(a)/drafts/d.txt)" != ignored

            # The other device has the sources and the rules, nothing ignored; the store
            # names none of it (and the same search finds a synced name: the control).
            waitfor '[ -e \(b)/proj/src/main.c ]'
            test ! -e \(b)/proj/build && test ! -e \(b)/proj/node_modules && test ! -e \(b)/scratch.nosync
            test "$(cat \(b)/.ubiqfsignore)" = "$(printf 'build/\\nnode_modules/\\n*.o')"
            fails grep -rqa -e ignored-artifact -e left-pad-marker -e nosync-scratch-note \(store)
            grep -rqa main.c \(store)

            # Out of an ignored folder: a new item for the other device.
            mv \(a)/proj/build/report.txt \(a)/proj/report.txt
            test "$(state \(a)/proj/report.txt)" != ignored
            waitfor '[ "$(cat \(b)/proj/report.txt 2>/dev/null)" = "the report" ]'

            # b's own list: *.secret stays on b.
            echo 'key' > \(b)/proj/api.secret
            test "$(state \(b)/proj/api.secret)" = ignored

            # The rules edited on b apply on a once they are there.
            echo '*.log' >> \(b)/.ubiqfsignore
            \(bin) sync --wait \(b)
            waitfor '[ "$(state \(a)/.ubiqfsignore)" = local ] && grep -q log \(a)/.ubiqfsignore'
            echo 'log line' > \(a)/proj/run.log
            test "$(state \(a)/proj/run.log)" = ignored
            echo 'synced' > \(a)/proj/after-rules.txt
            \(bin) sync --wait \(a)
            waitfor '[ -e \(b)/proj/after-rules.txt ]'
            test ! -e \(b)/proj/run.log && test ! -e \(a)/proj/api.secret
            fails grep -rqa -e run.log -e api.secret \(store)
            """, timeout: 600)
    }

    /// `ubiqfs reset` keeps ignored items: the next mount puts them back at their places.
    @Test func ignoredItemsSurviveAReset() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a", device: "laptop")
        let (bin, state) = (MountFixture.binary, fixture.root + "/a.state")
        try await fixture.sh("""
            mkdir -p \(a)/proj/venv.nosync/bin
            echo 'print(1)' > \(a)/proj/main.py
            echo '#!/bin/sh' > \(a)/proj/venv.nosync/bin/activate
            ln -s activate \(a)/proj/venv.nosync/bin/link
            \(bin) sync --wait \(a)
            """)
        try await fixture.unmount(a)
        try await fixture.sh("""
            \(bin) reset \(a) --state-dir \(state) | grep -q '4 ignored item(s) kept'
            """)
        let again = try await fixture.mount("a", device: "laptop")
        try await fixture.sh("""
            test "$(cat \(again)/proj/venv.nosync/bin/activate)" = '#!/bin/sh'
            test "$(readlink \(again)/proj/venv.nosync/bin/link)" = activate
            test "$(getfattr --only-values -n user.ubiqfs.state \(again)/proj/venv.nosync/bin/activate)" = ignored
            test "$(cat \(again)/proj/main.py)" = 'print(1)'
            test ! -e \(state)/kept
            """)
    }

}
