import Foundation
import Testing

/// Access times on a real mount, as `stat` shows them after `cat` and `ls`: relatime by
/// default, kept across a remount; `--atime noatime` and `-o strictatime` as on ext4.
@Suite(.serialized) struct AccessTimeMountTests {
    /// `FILE SECONDS`: FILE's access time passes SECONDS within 5 s. The daemon moves it
    /// at the open and tells the kernel its cached attributes are stale from the notifier
    /// thread (never inside the callback), so a `stat` right after may still see the old.
    static let movesPast = #"movespast() { for _ in $(seq 1 50); do [ "$(stat -c %X "$1")" -gt "$2" ] && return 0; sleep 0.1; done; echo "atime of $1 stayed at $(stat -c %X "$1")" >&2; return 1; }; movespast"#

    @Test func catAndLsMoveAccessTimesByTheMountsRule() async throws {
        let fixture = try MountFixture()
        var mountpoint = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir \(mountpoint)/d && echo aaa > \(mountpoint)/d/f
            before=$(stat -c %X \(mountpoint)/d/f)
            sleep 1.1
            cat \(mountpoint)/d/f > /dev/null
            \(Self.movesPast) \(mountpoint)/d/f "$before"
            first=$(stat -c %X \(mountpoint)/d/f)
            sleep 1.1
            cat \(mountpoint)/d/f > /dev/null
            test "$(stat -c %X \(mountpoint)/d/f)" = "$first"
            # A listing of the folder, changed since: its time moves too.
            folder=$(stat -c %X \(mountpoint)/d)
            ls \(mountpoint)/d > /dev/null
            test "$(stat -c %X \(mountpoint)/d)" -ge "$folder"
            echo "$first" > first.txt
            """)
        try await fixture.unmount(mountpoint)
        mountpoint = try await fixture.mount("a", extra: ["--atime", "noatime"])
        try await fixture.sh("""
            test "$(stat -c %X \(mountpoint)/d/f)" = "$(cat first.txt)"
            echo bbb > \(mountpoint)/d/g
            before=$(stat -c %X \(mountpoint)/d/g)
            sleep 1.1
            cat \(mountpoint)/d/g > /dev/null
            test "$(stat -c %X \(mountpoint)/d/g)" = "$before"
            touch -a -d @1000000000 \(mountpoint)/d/g
            test "$(stat -c %X \(mountpoint)/d/g)" = 1000000000
            """)
        try await fixture.unmount(mountpoint)
        // The mount.fuse form: `-o strictatime` moves it at every read.
        mountpoint = fixture.root + "/a"
        try await fixture.sh("""
            \(bin) \(fixture.store) \(mountpoint) -o strictatime,state-dir=\(fixture.root)/a.state,device=a
            trap '\(bin) unmount \(mountpoint)' EXIT
            cat \(mountpoint)/d/f > /dev/null
            one=$(stat -c %X \(mountpoint)/d/f)
            sleep 1.1
            cat \(mountpoint)/d/f > /dev/null
            \(Self.movesPast) \(mountpoint)/d/f "$one"
            """)
    }
}
