import Foundation
import Testing

/// How people run ubiqfs day to day: `mount -t fuse.ubiqfs` and fstab lines through
/// mount.fuse3, `umount`, mount profiles, `ubiqfs doctor`, `ubiqfs reset`, and the
/// systemd service protocol (READY=1, STOPPING=1, journal priorities).
@Suite(.serialized) struct DailyUseMountTests {
    /// mount(8) runs mount.fuse3 with no PATH, and dash then looks in /usr/local/sbin among
    /// others: a private mount namespace with our binary bind-mounted there is a machine
    /// where ubiqfs is installed, without installing anything on this one.
    static func inInstalledNamespace(_ fixture: MountFixture, _ script: String) -> String {
        """
        mkdir -p \(fixture.root)/bin && ln -sf \(MountFixture.binary) \(fixture.root)/bin/ubiqfs
        unshare -m --propagation private bash -euo pipefail -c '
        \(MountFixture.failsHelper)
        \(namespaceErrTrap)
        mount --bind \(fixture.root)/bin /usr/local/sbin
        \(script)
        '
        """
    }

    /// `MountFixture.errTrap` for the script inside the namespace, which has no single
    /// quote; its first line is the fifth of the inner `bash -c`.
    static let namespaceErrTrap = #"trap "echo \"failed at namespace script line \$((LINENO - 4)): \$BASH_COMMAND\" >&2" ERR"#

    @Test func mountTypeFuseUbiqfsFstabAndUmount() async throws {
        let fixture = try MountFixture()
        let root = fixture.root
        let port = try MetricsMountTests.freePort()
        try await fixture.sh(Self.inInstalledNamespace(fixture, """
            mkdir -p \(root)/one \(root)/two
            echo "*.secret" > \(root)/ignores
            trap "umount -l \(root)/one 2>/dev/null || true; umount -l \(root)/two 2>/dev/null || true" EXIT
            mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,device=one,container=team,cache-size=1G,allow_other,allow-plain-http,_netdev,nofail,x-systemd.automount,noatime,ignore_file=\(root)/ignores,thumbnail_cache=\(root)/one-thumbs,lookers=sniffer:head
            grep " \(root)/one fuse.ubiqfs " /proc/mounts | grep -q "nosuid,nodev"
            pgrep -af "[-]-state-dir=\(root)/one.state " | grep -q -- "--thumbnail-cache=\(root)/one-thumbs .*--lookers=sniffer:head"
            # The ignore list of this device alone (no single quote in this script).
            echo key > \(root)/one/api.secret
            test "$(getfattr --only-values -n user.ubiqfs.state \(root)/one/api.secret)" = ignored
            rm \(root)/one/api.secret
            # The -o options reached the daemon: container, allow_other, cache size.
            grep "^ubiqfs:team \(root)/one fuse.ubiqfs " /proc/mounts | grep -q allow_other
            \(MountFixture.binary) status \(root)/one --json | grep -q "cacheBudget.*1073741824"
            echo hello > \(root)/one/f
            daemon=$(pgrep -f "[-]-state-dir=\(root)/one.state ")
            # A slow store: the last push after umount takes seconds, and a remount of the
            # same state dir right away waits for it instead of failing. (Slow enough that
            # a loaded machine starts the remount before that push ends.)
            \(MountFixture.binary) faults \(root)/one latency=3s
            echo again > \(root)/one/g
            umount \(root)/one
            kill -0 $daemon
            for _ in $(seq 1 50); do test -e \(root)/one.state/stopping && break; sleep 0.1; done
            test -e \(root)/one.state/stopping
            mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,device=one,container=team
            test "$(cat \(root)/one/g)" = again
            grep -q "waiting for the previous daemon" \(root)/one.state/ubiqfs.log
            # It released the state dir (the mount got it); its exit is reaped by init.
            for _ in $(seq 1 100); do kill -0 $daemon 2>/dev/null || break; sleep 0.1; done
            fails kill -0 $daemon 2>/dev/null
            daemon=$(pgrep -f "[-]-state-dir=\(root)/one.state ")
            umount \(root)/one
            # The daemon pushes what is pending, then exits.
            for _ in $(seq 1 300); do kill -0 $daemon 2>/dev/null || break; sleep 0.1; done
            fails kill -0 $daemon 2>/dev/null
            # An fstab line (mount -T reads another fstab): a second device sees the push.
            echo "\(fixture.store) \(root)/two fuse.ubiqfs state_dir=\(root)/two.state,device=two,container=team,metrics=127.0.0.1:\(port),_netdev,nofail,noauto,x-systemd.automount,comment=x 0 0" > \(root)/fstab
            mount -T \(root)/fstab \(root)/two
            test "$(cat \(root)/two/f)" = hello
            curl -fsS http://127.0.0.1:\(port)/metrics | grep -q "^ubiqfs_mount_up{mount=.\(root)/two.} 1$"
            umount \(root)/two
            # What cannot be honoured is refused with the reason, and nothing is mounted.
            # Read-only (ro): served and kept up to date, but nothing is written or pushed.
            mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,device=one,container=team,ro
            grep " \(root)/one fuse.ubiqfs ro," /proc/mounts
            \(MountFixture.binary) status \(root)/one | grep -q "read-only:"
            test "$(cat \(root)/one/f)" = hello
            fails sh -c "echo changed > \(root)/one/f" 2> err
            grep -q "Read-only file system" err
            fails touch \(root)/one/new 2>/dev/null
            fails rm \(root)/one/f 2>/dev/null
            fails setfattr -n user.x -v 1 \(root)/one/f 2>/dev/null
            mount -T \(root)/fstab \(root)/two
            echo "from two" > \(root)/two/later
            \(MountFixture.binary) sync \(root)/two --wait
            umount \(root)/two
            \(MountFixture.binary) sync \(root)/one --wait
            test "$(cat \(root)/one/later)" = "from two"
            # Once two has exited, any further record would come from one. (A write may
            # become several records: a push may fall between the open and the write.)
            for _ in $(seq 1 300); do pgrep -f "[-]-state-dir=\(root)/two.state " > /dev/null || break; sleep 0.1; done
            fails pgrep -f "[-]-state-dir=\(root)/two.state " > /dev/null
            records=$(ls \(fixture.store)/team/journal | wc -l)
            \(MountFixture.binary) sync \(root)/one --wait
            test "$(ls \(fixture.store)/team/journal | wc -l)" = $records
            # remount,rw: writable again, and what is written is pushed; remount,ro: not.
            mount -o remount,rw \(root)/one
            grep " \(root)/one fuse.ubiqfs rw," /proc/mounts | grep -q nosuid
            echo "after remount" > \(root)/one/rw.txt
            \(MountFixture.binary) sync \(root)/one --wait
            test "$(ls \(fixture.store)/team/journal | wc -l)" -gt $records
            mount -o remount,ro \(root)/one
            grep -q " \(root)/one fuse.ubiqfs ro," /proc/mounts
            fails touch \(root)/one/again 2>/dev/null
            \(MountFixture.binary) status \(root)/one | grep -q "read-only:"
            umount \(root)/one
            fails mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,colour=blue 2> err
            grep -q "unknown mount option .colour=blue." err
            fails mount -t fuse.ubiqfs relative/store \(root)/one -o state-dir=\(root)/one.state 2> err
            grep -q "must be an absolute path or s3://" err
            fails grep -q " \(root)/one " /proc/mounts
            # noexec is honoured, not just accepted.
            mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,container=team,noexec
            grep " \(root)/one fuse.ubiqfs " /proc/mounts | grep -q noexec
            umount \(root)/one
            # subtype= (empty): the type is plain fuse, for tools that expect it (xfstests).
            mount -t fuse.ubiqfs \(fixture.store) \(root)/one -o state-dir=\(root)/one.state,container=team,noexec,subtype=
            grep -q " \(root)/one fuse " /proc/mounts
            printf "#!/bin/sh\\necho ran\\n" > \(root)/one/tool && chmod +x \(root)/one/tool
            fails \(root)/one/tool 2> err
            grep -q "Permission denied" err
            umount \(root)/one
            """))
        // A mistyped subcommand is an error, never a mount of a new store.
        let typo = try await MountFixture.run([MountFixture.binary, "unmout", root + "/one"], directory: root, timeout: 30)
        #expect(typo.status != 0)
        #expect(typo.error.contains("unmout"))
        #expect(!FileManager.default.fileExists(atPath: root + "/unmout"))
    }

    @Test func profilesNameMounts() async throws {
        let fixture = try MountFixture()
        let root = fixture.root
        let bin = MountFixture.binary
        let port = try MetricsMountTests.freePort()
        try await fixture.sh("""
            export XDG_CONFIG_HOME=\(root)/config XDG_STATE_HOME=\(root)/state
            mkdir -p $XDG_CONFIG_HOME/ubiqfs
            cat > $XDG_CONFIG_HOME/ubiqfs/mounts.conf <<EOF
            # the team's container
            [work]
            mountpoint = \(root)/work-mnt
            store = \(fixture.store)
            device = desk
            cache-size = 1G
            transfers = 8
            bwlimit = 10M:off
            ignore-file = \(root)/ignores
            thumbnails = off
            metrics = \(port)
            EOF
            echo '*.secret' > \(root)/ignores
            trap "\(bin) unmount work 2>/dev/null || fusermount3 -uz \(root)/work-mnt 2>/dev/null || true" EXIT
            # Transfer options are checked before anything is mounted.
            fails \(bin) mount work --bwlimit fast 2> err
            grep -q "invalid --bwlimit 'fast'" err
            fails \(bin) mount work --transfers 0 2> err
            grep -q "invalid --transfers 0" err
            fails \(bin) mount work --lookers viewer:eog 2> err
            grep -q "is not KIND:NAME" err
            fails \(bin) mount work --thumbnails maybe 2> err
            grep -q "expected on or off" err
            fails \(bin) mount work --metrics 0 2> err
            grep -q "invalid --metrics 0: expected PORT or HOST:PORT" err
            fails grep -q " \(root)/work-mnt " /proc/mounts
            \(bin) mount work
            pgrep -af "[-]-device=desk " | grep -q -- "--thumbnails=off"
            curl -fsS http://127.0.0.1:\(port)/healthz | grep -qx ok
            echo key > \(root)/work-mnt/api.secret
            test "$(getfattr --only-values -n user.ubiqfs.state \(root)/work-mnt/api.secret)" = ignored
            rm \(root)/work-mnt/api.secret
            # Past the inline limit (1 KiB), so it is uploaded (in a pack of its own).
            head -c 2048 /dev/urandom > \(root)/work-mnt/f
            \(bin) sync work --wait
            \(bin) status work | grep -q "pending uploads: 0"
            \(bin) status work | grep -q "device:          desk"
            # The profile's transfer count and bandwidth limit (up only) reached the daemon;
            # the status counts what went.
            test "$(\(bin) status work --json | grep -c '"limit" : 8')" = 2
            test "$(\(bin) status work --json | grep -c '"pace" : 10485760')" = 1
            \(bin) status work | grep -q "uploads:         0 in flight (0 B), 0 queued, 1 done (2.0 KiB), .*limited to 10.0 MiB/s"
            \(bin) status work | grep "downloads:" | fails grep -q "limited"
            # Its own state dir by default, under the profile's name.
            test -f \(root)/state/ubiqfs/work/state.db
            \(bin) unmount work
            fails grep -q " \(root)/work-mnt " /proc/mounts
            # Mistakes in the file are named with their line.
            printf '[bad]\\nmountpoint = /x\\ncolour = blue\\n' > $XDG_CONFIG_HOME/ubiqfs/mounts.conf
            fails \(bin) mount bad 2> err
            grep -q "mounts.conf:3: unknown key 'colour'" err
            printf '[nomount]\\nstore = /x\\n' > $XDG_CONFIG_HOME/ubiqfs/mounts.conf
            fails \(bin) mount nomount 2> err
            grep -q "\\[nomount\\] has no mountpoint" err
            printf '[rel]\\nmountpoint = Cloud\\n' > $XDG_CONFIG_HOME/ubiqfs/mounts.conf
            fails \(bin) mount rel 2> err
            grep -q "mountpoint = Cloud: write an absolute path" err
            # What the systemd unit runs: a name that is no profile is an error, not a path.
            mkdir -p \(root)/ghost
            printf '[work]\\nmountpoint = /x\\n' > $XDG_CONFIG_HOME/ubiqfs/mounts.conf
            fails \(bin) mount ghost --profile 2> err
            grep -q "no mount named 'ghost'" err
            fails grep -q " \(root)/ghost " /proc/mounts
            """)
    }

    @Test func doctorOnGoodAndBrokenSetups() async throws {
        let fixture = try MountFixture()
        let root = fixture.root
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir -p \(root)/m
            \(bin) doctor \(root)/m --store \(fixture.store) --state-dir \(root)/d.state > out
            grep -q "ok    /dev/fuse: usable" out
            grep -q "ok    store: the local folder \(fixture.store) will be created" out
            grep -q "all checks passed" out
            # Doctor changes nothing.
            test ! -e \(fixture.store) && test ! -e \(root)/d.state
            # A missing mountpoint and an S3 endpoint nobody listens on.
            fails env AWS_ACCESS_KEY_ID=a AWS_SECRET_ACCESS_KEY=b AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:9 \\
                \(bin) doctor \(root)/missing --store s3://bucket/team --state-dir \(root)/d.state --timeout 5 > out
            grep -q "FAIL  mountpoint: \(root)/missing does not exist" out
            grep -q "fix: mkdir -p \(root)/missing" out
            grep -q "FAIL  store: .*127.0.0.1:9" out
            grep -q "2 check(s) failed" out
            # No /dev/fuse (a private /dev without it).
            fails unshare -m --propagation private bash -c 'mount -t tmpfs none /dev && exec "$0" doctor \(root)/m --store \(fixture.store) --state-dir \(root)/d.state' \(bin) > out
            grep -q "FAIL  /dev/fuse: No such file or directory" out
            grep -q "fix: sudo modprobe fuse" out
            """)
        // A running mount is reported as such; a dead one (daemon killed) as dead.
        let m = try await fixture.mount("live")
        try await fixture.sh("""
            \(bin) doctor \(m) --store \(fixture.store) --state-dir \(root)/live.state > out
            grep -q "is mounted now" out
            grep -q "in use by a running daemon" out
            grep -q "container default (id " out
            pkill -9 -f "[-]-state-dir=\(root)/live.state "
            sleep 0.5
            fails \(bin) doctor \(m) --store \(fixture.store) --state-dir \(root)/live.state > out
            grep -q "FAIL  mountpoint: \(m) is a dead mount" out
            """)
    }

    @Test func resetRefusesPendingWorkThenStartsOver() async throws {
        let fixture = try MountFixture()
        let root = fixture.root
        let bin = MountFixture.binary
        let m = try await fixture.mount("a")
        let state = root + "/a.state"
        try await fixture.sh("""
            echo kept > \(m)/uploaded.txt
            \(bin) sync \(m) --wait
            fails \(bin) reset \(m) --state-dir \(state) 2> err
            grep -q "in use by a running mount" err
            \(bin) pause \(m)
            echo pending > \(m)/notyet.txt
            # The daemon dies with the change not uploaded.
            pkill -9 -f "[-]-state-dir=\(state) "
            sleep 0.5
            fails \(bin) reset \(m) --state-dir \(state) 2> err
            grep -q "1 item(s) with changes not uploaded: /notyet.txt" err
            test -f \(state)/state.db
            """)
        // Mounting again recovers the dead mount and pushes; then the reset goes through.
        let mount = "\(bin) mount \(m) --store \(fixture.store) --state-dir \(state)"
        try await fixture.sh("""
            \(mount) 2> err
            grep -q "was a dead mount" err
            \(bin) sync \(m) --wait
            \(bin) unmount \(m)
            # Cached content that differs from what was recorded is not thrown away either.
            ino=$(sqlite3 \(state)/state.db "SELECT ino FROM item WHERE name = CAST('uploaded.txt' AS BLOB)")
            cp \(state)/cache/$ino saved && echo "written, never recorded" >> \(state)/cache/$ino
            fails \(bin) reset \(m) --state-dir \(state) 2> err
            grep -q "differs from what was recorded (a crash mid-write?): /uploaded.txt" err
            cp saved \(state)/cache/$ino
            # Not a ubiqfs state dir: nothing is touched.
            mkdir other && sqlite3 other/state.db "CREATE TABLE t(x)"
            fails \(bin) reset \(m) --state-dir \(root)/other 2> err
            grep -q "is not a ubiqfs state database" err
            test -f other/state.db
            \(bin) reset \(m) --state-dir \(state) --dry-run | grep -q "would remove from \(state): state.db, .*cache"
            test -f \(state)/state.db
            \(bin) reset \(m) --state-dir \(state) | grep -q "the next mount starts over from the store"
            test "$(ls \(state) | tr '\\n' ' ')" = "lock ubiqfs.log "
            \(mount)
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/notyet.txt)" = placeholder
            test "$(cat \(m)/notyet.txt)" = pending
            test "$(cat \(m)/uploaded.txt)" = kept
            """)
    }

    /// What systemd sees of `ubiqfs@NAME.service` (Type=notify, stderr to the journal).
    @Test func tellsSystemdWhenReadyAndStoppingAndLogsWithPriorities() async throws {
        let fixture = try MountFixture()
        let root = fixture.root
        try FileManager.default.createDirectory(atPath: root + "/svc", withIntermediateDirectories: true)
        try await fixture.sh("""
            python3 - <<'PY'
            import os, signal, socket, subprocess, time
            root = "\(root)"
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(root + "/notify.sock")
            sock.settimeout(60)
            log = open(root + "/journal.log", "wb")
            info = os.fstat(log.fileno())
            env = dict(os.environ, NOTIFY_SOCKET=root + "/notify.sock", JOURNAL_STREAM=f"{info.st_dev}:{info.st_ino}")
            daemon = subprocess.Popen(["\(MountFixture.binary)", "mount", root + "/svc", "--store", "\(fixture.store)",
                                       "--state-dir", root + "/svc.state", "--foreground"], env=env, stderr=log, stdout=log)
            try:
                ready = sock.recv(4096).decode()
                assert ready.startswith("READY=1"), ready
                assert os.path.ismount(root + "/svc")
                with open(root + "/svc/f", "w") as f:
                    f.write("x")
                daemon.send_signal(signal.SIGTERM)
                stopping = sock.recv(4096).decode()
                assert stopping.startswith("STOPPING=1"), stopping
                assert daemon.wait(60) == 0
                assert not os.path.ismount(root + "/svc")
            finally:
                if daemon.poll() is None:
                    daemon.kill()
                    subprocess.run(["fusermount3", "-uz", root + "/svc"])
            lines = open(root + "/journal.log").read().splitlines()
            assert lines and all(line[:3] in ("<2>", "<3>", "<4>", "<5>", "<6>", "<7>") for line in lines), lines
            assert any(line.startswith("<6>[ubiqfs] mounted ") for line in lines), lines
            PY
            """)
    }
}
