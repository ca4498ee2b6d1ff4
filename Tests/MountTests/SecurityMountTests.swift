import Foundation
import Glibc
import Testing

/// What the mount promises other users and other namespaces: the kernel checks
/// permissions, other users are out unless asked for, only user.* xattrs exist, and
/// this device's state is private.
@Suite struct SecurityMountTests {
    @Test(.enabled(if: getuid() == 0, "switching to another user needs root"))
    func otherUsersAreKeptOutUnlessAsked() async throws {
        let fixture = try MountFixture()
        let m = try await fixture.mount("m")
        try await fixture.sh("""
            chmod 755 \(fixture.root)
            grep " \(m) " /proc/mounts | grep -q default_permissions
            grep " \(m) " /proc/mounts | fails grep -q allow_other
            # Without --allow-other even a world-readable file is out of reach for others.
            echo public > \(m)/public.txt && chmod 644 \(m)/public.txt
            fails su nobody -s /bin/sh -c 'cat \(m)/public.txt' 2>/dev/null
            """)
        try await fixture.unmount(m)
        let shared = try await fixture.mount("m", extra: ["--allow-other"])
        try await fixture.sh("""
            grep " \(shared) " /proc/mounts | grep -q allow_other
            test "$(su nobody -s /bin/sh -c 'cat \(shared)/public.txt')" = public
            # The kernel checks each item's mode and owner (default_permissions).
            echo secret > \(shared)/secret.txt && chmod 600 \(shared)/secret.txt
            fails su nobody -s /bin/sh -c 'cat \(shared)/secret.txt' 2>/dev/null
            fails su nobody -s /bin/sh -c 'echo x > \(shared)/public.txt' 2>/dev/null
            fails su nobody -s /bin/sh -c 'touch \(shared)/new.txt' 2>/dev/null
            fails su nobody -s /bin/sh -c 'rm \(shared)/public.txt' 2>/dev/null
            test "$(cat \(shared)/public.txt)" = public
            # A write by another user clears setuid and setgid, as on any Linux filesystem
            # (write-only opens bypass the page cache, but not on such a file).
            echo start > \(shared)/setid && chmod 6777 \(shared)/setid
            test "$(stat -c %a \(shared)/setid)" = 6777
            su nobody -s /bin/sh -c 'echo more >> \(shared)/setid'
            test "$(stat -c %a \(shared)/setid)" = 777
            test "$(cat \(shared)/setid)" = "$(printf 'start\nmore')"
            # So does an allocation by another user (xfstests generic/683)...
            chmod 6777 \(shared)/setid
            su nobody -s /bin/sh -c 'fallocate -l 1M \(shared)/setid'
            test "$(stat -c %a \(shared)/setid)" = 777
            # ...and a chown clears setuid, and setgid only with group execute (generic/193).
            chmod 6777 \(shared)/setid && chown nobody \(shared)/setid
            test "$(stat -c %a \(shared)/setid)" = 777
            chmod 2745 \(shared)/setid && chown root \(shared)/setid
            test "$(stat -c %a \(shared)/setid)" = 2745
            """)
    }

    /// A symlink in the container may point anywhere: the item commands act on items of
    /// the mount, never through a link and never outside (issue 35: `download` of a mount
    /// set an xattr on /etc/shadow through a link).
    @Test func theItemCommandsNeverFollowALinkOutOfTheMount() async throws {
        let fixture = try MountFixture()
        let m = try await fixture.mount("m")
        let outside = fixture.root + "/outside"
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir -p \(outside)/folder && echo theirs > \(outside)/file && echo theirs > \(outside)/folder/inner
            mkdir \(m)/docs && echo mine > \(m)/docs/mine.txt
            ln -s \(outside)/file \(m)/docs/to-file
            ln -s \(outside)/folder \(m)/to-folder
            \(bin) sync --wait \(m)
            \(bin) download \(m)
            for command in pin evict unpin download; do
                fails \(bin) $command \(m)/to-folder 2> err
                grep -q "is a symlink" err || { cat err >&2; false; }
                fails \(bin) $command \(outside)/file 2> err
                grep -q -e "not inside a ubiqfs mount" -e "is a symlink" err || { cat err >&2; false; }
            done
            # Nothing outside got an attribute, through a link or directly.
            for target in \(outside)/file \(outside)/folder \(outside)/folder/inner; do
                test -z "$(getfattr -d -m - $target 2>/dev/null)" || { getfattr -d -m - $target >&2; false; }
            done
            \(bin) pin \(m)/docs
            test "$(getfattr --only-values -n user.ubiqfs.pinned \(m)/docs/mine.txt)" = 1
            """)
        try await fixture.unmount(m)
    }

    /// A state dir somebody else made (a `/tmp` path taken first), or with a link in it,
    /// is refused at mount; the CLI sends nothing to a control socket another user serves.
    @Test(.enabled(if: getuid() == 0, "switching to another user needs root"))
    func aStateDirOrSocketOfSomebodyElseIsRefused() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let (r, store) = (fixture.root, fixture.store)
        try await fixture.sh("""
            chmod 755 \(r) && mkdir \(r)/x
            # Made by somebody else, open to all.
            mkdir -m 777 \(r)/taken && chown nobody \(r)/taken
            fails \(bin) mount \(r)/x --store \(store) --state-dir \(r)/taken 2> err
            grep -q "belongs to uid" err || { cat err >&2; false; }
            # Ours, but with the log a link to somebody's file.
            mkdir -m 700 \(r)/linked && echo mine > \(r)/victim && ln -s \(r)/victim \(r)/linked/ubiqfs.log
            fails \(bin) mount \(r)/x --store \(store) --state-dir \(r)/linked 2> err
            grep -q "is a symlink" err || { cat err >&2; false; }
            test "$(cat \(r)/victim)" = mine
            # Ours and open to all: made private, then used.
            mkdir -m 777 \(r)/open
            \(bin) mount \(r)/x --store \(store) --state-dir \(r)/open --poll-interval 0.5
            test "$(stat -c %a \(r)/open)" = 700
            # A socket another user serves where the daemon's was: nothing is sent to it.
            mv \(r)/open/control.sock \(r)/open/control.real
            mkdir \(r)/n && chown nobody \(r)/n
            su nobody -s /bin/sh -c "python3 -c '
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(\\"\(r)/n/fake.sock\\"); s.listen(1); print(\\"ready\\", flush=True)
            c, _ = s.accept(); c.settimeout(3)
            try: data = c.recv(4096)
            except OSError: data = b\\"\\"
            open(\\"\(r)/n/fake.got\\", \\"wb\\").write(data)
            '" > \(r)/n/fake.out &
            for _ in $(seq 1 100); do grep -q ready \(r)/n/fake.out 2>/dev/null && break; sleep 0.05; done
            mv \(r)/n/fake.sock \(r)/open/control.sock
            fails \(bin) status \(r)/x 2> err
            grep -q "not by your ubiqfs daemon" err || { cat err >&2; false; }
            wait
            test ! -s \(r)/n/fake.got
            mv \(r)/open/control.real \(r)/open/control.sock
            \(bin) unmount \(r)/x
            """)
    }

    /// A folder everyone may write on a shared mount, with the owner's private file, a
    /// file open to all, and another user's (nobody's) file, all uploaded.
    static func sharedFolder(_ folder: String, _ fixture: MountFixture) -> String {
        """
        chmod 755 \(fixture.root)
        mkdir -m 777 \(folder)
        echo mine > \(folder)/private.txt && chmod 600 \(folder)/private.txt
        echo open > \(folder)/open.txt && chmod 666 \(folder)/open.txt
        su nobody -s /bin/sh -c 'echo theirs > \(folder)/theirs.txt'
        \(MountFixture.binary) sync --wait \(folder)
        """
    }

    /// On a shared mount another user may evict a folder they can write, but not the
    /// local copy of files in it they could not write themselves (XATTRS.md).
    @Test(.enabled(if: getuid() == 0, "switching to another user needs root"))
    func aFoldersEvictReachesOnlyWhatTheCallerCouldWrite() async throws {
        let fixture = try MountFixture()
        let m = try await fixture.mount("m", extra: ["--allow-other"])
        try await fixture.sh("""
            \(Self.sharedFolder(m + "/shared", fixture))
            su nobody -s /bin/sh -c 'setfattr -n user.ubiqfs.evict -v 1 \(m)/shared'
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/shared/private.txt)" = local
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/shared/theirs.txt)" = placeholder
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/shared/open.txt)" = placeholder
            # The owner's own evict of the folder reaches everything.
            setfattr -n user.ubiqfs.evict -v 1 \(m)/shared
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/shared/private.txt)" = placeholder
            test "$(cat \(m)/shared/private.txt)" = mine
            """)
        try await fixture.unmount(m)
    }

    /// On a shared mount another user's pin or unpin of a folder is passed on only to
    /// what they could change themselves: it does not download someone's private files,
    /// nor take away the pin their owner's folder gives them (XATTRS.md).
    @Test(.enabled(if: getuid() == 0, "switching to another user needs root"))
    func aFoldersPinByAnotherUserReachesOnlyWhatTheyCouldChange() async throws {
        let fixture = try MountFixture()
        let m = try await fixture.mount("m", extra: ["--allow-other"])
        try await fixture.sh("""
            mkdir -m 777 \(m)/top
            \(Self.sharedFolder(m + "/top/shared", fixture))
            pinned() { getfattr --only-values -n user.ubiqfs.pinned "\(m)/top/shared/$1"; }
            # The owner's pin of the folder above reaches every file; another user's unpin
            # of the folder inside reaches only what they could change.
            setfattr -n user.ubiqfs.pinned -v 1 \(m)/top
            su nobody -s /bin/sh -c 'setfattr -n user.ubiqfs.pinned -v 0 \(m)/top/shared'
            test "$(pinned private.txt)" = 1
            test "$(pinned theirs.txt)" = 0
            test "$(pinned open.txt)" = 0
            # Their pin does not download the owner's private file.
            setfattr -n user.ubiqfs.pinned -v 0 \(m)/top
            setfattr -n user.ubiqfs.evict -v 1 \(m)/top/shared
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/top/shared/private.txt)" = placeholder
            su nobody -s /bin/sh -c 'setfattr -n user.ubiqfs.pinned -v 1 \(m)/top/shared'
            test "$(pinned private.txt)" = 0
            test "$(pinned theirs.txt)" = 1
            for _ in $(seq 100); do
                test "$(getfattr --only-values -n user.ubiqfs.state \(m)/top/shared/theirs.txt)" = local && break
                sleep 0.1
            done
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/top/shared/theirs.txt)" = local
            test "$(getfattr --only-values -n user.ubiqfs.state \(m)/top/shared/private.txt)" = placeholder
            # The owner's own pin of the same folder reaches everything.
            setfattr -n user.ubiqfs.pinned -v 1 \(m)/top/shared
            test "$(pinned private.txt)" = 1
            """)
        try await fixture.unmount(m)
    }

    @Test func onlyUserXattrsAndPrivateState() async throws {
        let fixture = try MountFixture()
        let m = try await fixture.mount("m")
        let state = fixture.root + "/m.state"
        try await fixture.sh("""
            echo hi > \(m)/f
            for name in trusted.x security.x system.x; do
                fails setfattr -n $name -v 1 \(m)/f 2> err
                grep -q "Operation not supported" err
            done
            # Reading them says "not supported" too (not "no such attribute"): ls -l and cp -a
            # then stop asking for SELinux labels and ACLs file after file.
            for name in security.selinux system.posix_acl_access trusted.x; do
                fails getfattr -n $name \(m)/f 2> err
                grep -q "Operation not supported" err
            done
            setfattr -n user.x -v 1 \(m)/f
            test "$(getfattr --only-values -n user.x \(m)/f)" = 1
            test "$(getfattr -d -m - \(m)/f | grep -c '=')" = 1
            # Names are UTF-8: another byte string never reaches an attribute whose name
            # happens to decode to the same replacement character.
            python3 - \(m)/f <<'PY'
            import errno, os, sys
            f = sys.argv[1]
            os.setxattr(f, "user.\\ufffd", b"kept")
            for call in (lambda: os.getxattr(f, b"user.\\xff"), lambda: os.removexattr(f, b"user.\\xff")):
                try:
                    call()
                    sys.exit("a non-UTF-8 name found an attribute")
                except OSError as e:
                    assert e.errno == errno.ENODATA, e
            try:
                os.setxattr(f, b"user.\\xff", b"1")
                sys.exit("a non-UTF-8 name was stored")
            except OSError as e:
                assert e.errno == errno.ENOTSUP, e
            assert os.getxattr(f, "user.\\ufffd") == b"kept"
            os.removexattr(f, "user.\\ufffd")
            # Names differing only in Unicode normalisation are one attribute, kept in NFC.
            os.setxattr(f, "user.cafe\\u0301", b"nfd")
            assert os.getxattr(f, "user.caf\\u00e9") == b"nfd"
            assert [n for n in os.listxattr(f) if n.startswith("user.caf")] == ["user.caf\\u00e9"]
            os.removexattr(f, "user.caf\\u00e9")
            # An item's attributes are bounded (256 KiB in all): past that, ENOSPC, as on ext4,
            # and what was there stays.
            for i in range(3):
                os.setxattr(f, f"user.big{i}", bytes([i]) * 65536)
            try:
                os.setxattr(f, "user.big3", b"x" * 65536)
                sys.exit("the attribute limit was not enforced")
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
            assert [os.getxattr(f, f"user.big{i}") for i in range(3)] == [bytes([i]) * 65536 for i in range(3)]
            for i in range(3):
                os.removexattr(f, f"user.big{i}")
            PY
            \(MountFixture.binary) sync \(m) --wait
            # This device's state: the folder 0700, every file in it 0600.
            test "$(stat -c %a \(state))" = 700
            test "$(stat -c %a \(state)/cache)" = 700
            test -z "$(find \(state) -type f ! -perm 600)"
            test -n "$(find \(state)/cache -type f)"
            """)
    }
}
