import Foundation
import Glibc
import Testing

/// What a program sees when the state disk fails under the mount: a full disk gives
/// ENOSPC, an I/O error gives EIO with a log line, and neither damages anything else.
@Suite struct FaultMountTests {
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullCacheDiskGivesENOSPCAndDamagesNothing() async throws {
        let fixture = try MountFixture()
        let small = fixture.root + "/small"
        try await fixture.sh("mkdir -p \(small) && mount -t tmpfs -o size=48m,mode=0700 ubiqfs-test-small \(small)")
        defer { _ = try? MountFixture.runBlocking(["umount", "-l", small], timeout: 30) }
        let bin = MountFixture.binary
        let m = try await fixture.mount("m", state: "small/state")
        try await fixture.sh("""
            seq 1 20000 > \(m)/keep.txt
            \(bin) sync \(m) --wait
            \(bin) evict \(m)/keep.txt
            mkdir \(m)/empty && (cd \(m)/empty && touch $(seq 1 64))
            # The program that fills the disk is told so.
            fails dd if=/dev/zero of=\(m)/big bs=1M count=100 2> err
            grep -q "No space left on device" err || { cat err >&2; false; }
            # Reading a placeholder needs room too, and says so (never EIO or zeros).
            fails cat \(m)/keep.txt > /dev/null 2> err
            grep -q "No space left on device" err || { cat err >&2; false; }
            ls \(m) | grep -q big || { ls -la \(m) >&2; false; }
            \(bin) status \(m) > /dev/null
            # Deletes that free nothing, one after another while the disk stays full (as
            # xfstests generic/103 does): each goes through.
            for i in $(seq 1 64); do rm \(m)/empty/$i; done
            # fsync too, though the database's sync needs a page of log: what the programs
            # did is on disk when it returns.
            python3 -c "import os; fd = os.open('\(m)/empty', os.O_RDONLY); os.fsync(fd)"
            python3 -c "import os; fd = os.open('\(m)/keep.txt', os.O_RDONLY); os.fsync(fd)"
            # Space back, work goes on. The daemon frees a deleted file's blocks once nothing
            # of its own still reads them (a push may be uploading it): soon, not at once.
            rm \(m)/big
            for _ in $(seq 1 100); do [ "$(df --output=avail -k \(small) | tail -1)" -gt 30000 ] && break; sleep 0.1; done
            echo after > \(m)/after.txt
            test "$(cat \(m)/after.txt)" = after
            seq 1 20000 | cmp - \(m)/keep.txt
            \(bin) sync \(m) --wait
            """)
        try await fixture.unmount(m)
        try await fixture.sh("test \"$(sqlite3 \(small)/state/state.db 'pragma integrity_check')\" = ok")
        let again = try await fixture.mount("m", state: "small/state")
        try await fixture.sh("seq 1 20000 | cmp - \(again)/keep.txt && test \"$(cat \(again)/after.txt)\" = after")
        try await fixture.unmount(again)
    }

    /// The space of a file just deleted is there at once for the next allocation, as on
    /// ext4 (xfstests generic/213): its content, kept until the delete is on disk, goes
    /// when the disk is full.
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aDeletedFilesSpaceIsThereAtOnce() async throws {
        let fixture = try MountFixture()
        let small = fixture.root + "/small"
        try await fixture.sh("mkdir -p \(small) && mount -t tmpfs -o size=48m,mode=0700 ubiqfs-test-small \(small)")
        defer { _ = try? MountFixture.runBlocking(["umount", "-l", small], timeout: 30) }
        let bin = MountFixture.binary
        let m = try await fixture.mount("m", state: "small/state")
        try await fixture.sh("""
            \(bin) pause \(m)
            for round in 1 2 3; do
                fallocate -l 30M \(m)/first
                rm \(m)/first
                fallocate -l 30M \(m)/second
                rm \(m)/second
                head -c 30000000 /dev/zero > \(m)/third
                rm \(m)/third
            done
            \(bin) resume \(m)
            """)
        try await fixture.unmount(m)
    }

    @Test func anIOErrorOnTheStateDiskIsReportedAndDamagesNothing() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        // libfiu's POSIX preload in the daemon; the failure points are switched on later.
        let m = try await fixture.mount("m", launcher: ["fiu-run", "-x"])
        let state = fixture.root + "/m.state"
        try await fixture.sh("""
            echo keep > \(m)/keep.txt
            \(bin) sync \(m) --wait
            pid=$(\(bin) status \(m) --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
            # Every pwrite of the daemon (cache files and SQLite) fails with EIO; FUSE replies use writev.
            fiu-ctrl -c 'enable name=posix/io/rw/pwrite,failinfo=5' "$pid"
            fails sh -c 'echo new > \(m)/new.txt' 2> err
            grep -q "Input/output error" err
            test "$(cat \(m)/keep.txt)" = keep
            fiu-ctrl -c 'disable name=posix/io/rw/pwrite' "$pid"
            # The log says what failed.
            grep -Eq "error.*(write|I/O|disk)" \(state)/ubiqfs.log
            echo later > \(m)/later.txt
            test "$(cat \(m)/later.txt)" = later
            \(bin) sync \(m) --wait
            """)
        try await fixture.unmount(m)
        try await fixture.sh("test \"$(sqlite3 \(state)/state.db 'pragma integrity_check')\" = ok")
        let again = try await fixture.mount("m")
        try await fixture.sh("test \"$(cat \(again)/keep.txt)\" = keep && test \"$(cat \(again)/later.txt)\" = later")
        try await fixture.unmount(again)
    }

    @Test func faultsChangeOnARunningMount() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let m = try await fixture.mount("m")
        try await fixture.sh("""
            seq 1 1000 > \(m)/f.txt
            \(bin) sync \(m) --wait
            \(bin) evict \(m)/f.txt
            test "$(\(bin) faults \(m))" = "store faults: none"
            \(bin) faults \(m) hang,latency=10ms | grep -q "hang"
            \(bin) status \(m) | grep -q "store faults: *latency=10.*hang"
            fails \(bin) faults \(m) explode 2> err
            grep -q "is not one of" err
            # A reader of the placeholder waits for the hung store; lifting the faults lets it through.
            cat \(m)/f.txt > out & reader=$!
            sleep 1
            kill -0 $reader
            \(bin) faults \(m) off
            wait $reader
            seq 1 1000 | cmp - out
            \(bin) status \(m) | fails grep -q "store faults"
            """)
    }

    /// An unmount while the store hangs returns (after the stall limit, 6 s, well before
    /// the store timeout, 60 s), says on the terminal what stays pending, and releases the
    /// state dir: the next mount starts at once and pushes it. The store hangs before the
    /// file is written, so no push can take it first, however slow the machine.
    @Test func anUnmountWithAHungStoreReturnsAndKeepsWhatIsPending() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let m = try await fixture.mount("m")
        try await fixture.sh("""
            \(bin) faults \(m) hang
            echo kept > \(m)/kept.txt
            start=$(date +%s)
            \(bin) unmount \(m) > out
            elapsed=$(( $(date +%s) - start ))
            test "$elapsed" -lt 45 || { echo "unmount took $elapsed s" >&2; exit 1; }
            grep -q "pushed after the next mount" out || { echo "unmount said: $(cat out)" >&2; exit 1; }
            """)
        let again = try await fixture.mount("m")
        try await fixture.sh("\(bin) sync \(again) --wait")
        let other = try await fixture.mount("other")
        try await fixture.sh("test \"$(cat \(other)/kept.txt)\" = kept")
    }

    /// Work pending from the last run (here a file whose upload cannot finish) is pushed
    /// after the mount is up: the mount waits for the pull only, never for uploads (a large
    /// file left by a crash or a full store made mounting take minutes).
    @Test func pendingUploadsNeverDelayTheMount() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let m = try await fixture.mount("m")
        try await fixture.sh("""
            \(bin) pause \(m)
            head -c 3000000 /dev/urandom > \(m)/pending.bin
            cp \(m)/pending.bin expected.bin
            """)
        try await fixture.unmount(m)
        // Block transfers hang, for longer than the fixture waits for a mount.
        let again = try await fixture.mount("m", extra: ["--store-faults", "blocks,hang", "--store-timeout", "600"])
        try await fixture.sh("""
            cmp expected.bin \(again)/pending.bin
            # The file, and the root's time its create moved.
            \(bin) status \(again) | grep -q "pending uploads: 2"
            \(bin) faults \(again) off
            \(bin) sync \(again) --wait
            """)
        let other = try await fixture.mount("other")
        try await fixture.sh("cmp expected.bin \(other)/pending.bin")
    }

    /// A hung store at mount: a device that joined before starts offline and works; a new
    /// device is refused with a reason. Neither waits longer than the store timeout.
    @Test func aHungStoreAtMountNeitherBlocksNorLosesWork() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let m = try await fixture.mount("m")
        try await fixture.sh("echo before > \(m)/before.txt && \(bin) sync \(m) --wait")
        try await fixture.unmount(m)
        let hung = ["--store-faults", "hang", "--store-timeout", "2"]
        let again = try await fixture.mount("m", extra: hung)
        try await fixture.sh("""
            test "$(cat \(again)/before.txt)" = before
            echo offline > \(again)/offline.txt
            \(bin) status \(again) | grep -q offline
            \(bin) faults \(again) off
            \(bin) sync \(again) --wait
            """)
        let other = try await fixture.mount("other")
        try await fixture.sh("test \"$(cat \(other)/offline.txt)\" = offline")
        await #expect(throws: (any Error).self) { try await fixture.mount("new", extra: hung) }
    }
}
