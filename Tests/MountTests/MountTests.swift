import Foundation
import Testing

/// Real programs on a real mount. Serialized: each test mounts its own container, and
/// two cores are better spent on one at a time.
@Suite(.serialized) struct MountTests {
    @Test func largeFileCopyAndCompare() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            head -c 67108864 /dev/urandom > big.bin
            cp big.bin \(mnt)/big.bin
            cmp big.bin \(mnt)/big.bin
            test "$(stat -c %s \(mnt)/big.bin)" = 67108864
            """)
    }

    @Test func tarOfAHeaderTreeInAndOut() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            tar -C /usr/include -cf headers.tar linux
            mkdir \(mnt)/src && tar -C \(mnt)/src -xf headers.tar
            diff -r /usr/include/linux \(mnt)/src/linux
            tar -C \(mnt)/src -cf back.tar linux
            mkdir out && tar -C out -xf back.tar && diff -r /usr/include/linux out/linux
            """)
    }

    @Test func gitWorks() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        let status = try await fixture.sh("""
            export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
            git init -q repo && cd repo
            for i in $(seq 1 50); do echo "line $i" > file$i.txt; done
            mkdir -p sub/dir && echo deep > sub/dir/deep.txt
            git add -A && git commit -qm first
            echo changed >> file7.txt
            git mv file8.txt renamed.txt
            git status --porcelain
            git commit -qam second && git log --oneline | wc -l
            git fsck --no-progress 2>&1
            """, in: mnt)
        #expect(status.contains(" M file7.txt"))
        #expect(status.contains("R  file8.txt -> renamed.txt"))
        #expect(status.contains("\n2\n"))
    }

    @Test func sqliteWithThousandsOfRows() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        let count = try await fixture.sh("""
            sqlite3 app.db "create table t(id integer primary key, v text);"
            sqlite3 app.db "with recursive c(x) as (select 1 union all select x+1 from c where x < 20000) insert into t(v) select 'row ' || x from c;"
            sqlite3 app.db "update t set v = v || '!' where id % 3 = 0; delete from t where id % 10 = 0;"
            sqlite3 app.db "pragma integrity_check; select count(*) from t;"
            """, in: mnt)
        #expect(count == "ok\n18000\n")
    }

    @Test func scriptsMetadataAndXattrs() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            printf '#!/bin/sh\\necho ran "$1"\\n' > run.sh
            chmod +x run.sh
            test "$(./run.sh ok)" = "ran ok"
            echo data > a.txt && mv a.txt b.txt && test ! -e a.txt && test "$(cat b.txt)" = data
            truncate -s 3 b.txt && test "$(cat b.txt)" = dat
            truncate -s 10000 b.txt && test "$(stat -c %s b.txt)" = 10000
            touch -d '2001-02-03 04:05:06' b.txt && test "$(stat -c %Y b.txt)" = "$(date -d '2001-02-03 04:05:06' +%s)"
            chmod 600 b.txt && test "$(stat -c %a b.txt)" = 600
            setfattr -n user.color -v blue b.txt
            test "$(getfattr --only-values -n user.color b.txt)" = blue
            getfattr -d b.txt | grep -q user.color
            setfattr -x user.color b.txt && fails getfattr -n user.color b.txt 2>/dev/null
            ln -s b.txt link && test "$(readlink link)" = b.txt && test "$(cat link)" = "$(cat b.txt)"
            mkdir -p d1/d2 && rmdir d1/d2 && fails rmdir . 2>/dev/null
            # A folder's link count is 2 plus its subfolders (find and others rely on it).
            mkdir -p n/a n/b && touch n/f1 n/f2 n/f3 && test "$(stat -c %h n)" = 4
            rmdir n/a && test "$(stat -c %h n)" = 3 && rm -r n
            echo x > d1/f
            fails rmdir d1 2> err
            grep -q "Directory not empty" err
            rm -r d1 && test ! -e d1
            fails rm nothing-here 2> err
            grep -q "No such file or directory" err
            mkdir dir && echo y > dir/y && mkdir dest && echo z > dest/z
            fails mv -T dir dest 2> err
            grep -q "Directory not empty" err
            touch -d @100000000000 far.txt 2>/dev/null || true
            stat far.txt > /dev/null
            touch -d '1960-06-01 12:00:00.5' old.txt
            test "$(stat -c %Y old.txt)" = "$(date -d '1960-06-01 12:00:00' +%s)"
            """, in: mnt)
    }

    @Test func errorsForWhatCannotBeStored() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        // A folder cannot be linked (a file can: HardLinkMountTests).
        let out = try await fixture.sh("""
            echo x > f
            mkdir d
            ln d hard 2>&1 || true
            ls
            """, in: mnt)
        #expect(out.contains("not allowed") || out.contains("Operation not permitted"), "\(out)")
        #expect(!out.contains("hard\n"))
        // A file larger than the cache disk allows fails as it would there (EFBIG), not EIO.
        try await fixture.sh("""
            if ! truncate -s 999999999999999 native-probe 2> native-err; then
                fails truncate -s 999999999999999 \(mnt)/f 2> err
                diff <(sed 's/.*: //' native-err) <(sed 's/.*: //' err)
            fi
            """)
    }

    /// FIFOs, sockets and device nodes are items: the kernel serves FIFOs and sockets, the
    /// mount is nodev, and another device gets them as names with their mode and number.
    @Test func fifosSocketsAndDeviceNodes() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            mkfifo -m 640 pipe
            test -p pipe && test "$(stat -c %a pipe)" = 640
            (echo through the pipe > pipe &) ; test "$(cat pipe)" = "through the pipe"
            python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("sock"); s.listen(); c = socket.socket(socket.AF_UNIX); c.connect("sock")'
            test -S sock
            if [ "$(id -u)" = 0 ]; then
                mknod null c 1 3
                test "$(stat -c '%F %t %T' null)" = "character special file 1 3"
                fails cat null 2> /dev/null
                fails mknod wide c 5000 70000 2> err && grep -q "Invalid argument" err
            fi
            mv pipe renamed-pipe && rm sock
            # Far times are clamped to 2^62 ns from 1970, and sync as clamped.
            touch -d @100000000000 far.txt && test "$(stat -c %Y far.txt)" = 4611686018
            \(MountFixture.binary) sync \(a) --wait
            """, in: a)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            test -p renamed-pipe && test "$(stat -c %a renamed-pipe)" = 640
            test "$(stat -c %Y far.txt)" = 4611686018
            fails test -e sock
            if [ "$(id -u)" = 0 ]; then test "$(stat -c '%F %t %T' null)" = "character special file 1 3"; fi
            """, in: b)
    }

    @Test func atomicSavesRenamesAndOpenUnlinkedFiles() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            echo original > doc.txt
            id=$(getfattr --only-values -n user.ubiqfs.id doc.txt)
            echo saved > .doc.txt.tmp && mv .doc.txt.tmp doc.txt
            test "$(cat doc.txt)" = saved
            test "$(getfattr --only-values -n user.ubiqfs.id doc.txt)" = "$id"
            python3 - <<'PY'
            import ctypes, os
            libc = ctypes.CDLL(None, use_errno=True)
            AT = -100
            def renameat2(a, b, flags):
                if libc.renameat2(AT, a.encode(), AT, b.encode(), flags) != 0:
                    return ctypes.get_errno()
                return 0
            open("x", "w").write("X"); open("y", "w").write("Y")
            assert renameat2("x", "y", 1) == 17, "RENAME_NOREPLACE must fail with EEXIST"
            assert renameat2("x", "y", 2) == 0
            assert open("x").read() == "Y" and open("y").read() == "X"
            os.rename("y", "Y")  # case-only rename
            assert sorted(n for n in os.listdir(".") if n in ("x", "Y", "y")) == ["Y", "x"]
            f = open("x"); os.unlink("x")
            assert f.read() == "Y" and not os.path.exists("x")
            f.close()
            w = open("w", "w"); w.write("before "); os.unlink("w"); w.write("after"); w.flush()
            assert os.fstat(w.fileno()).st_size == 12
            w.close()
            PY
            """, in: mnt)
    }

    @Test func locksBetweenLocalProcesses() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            touch lockfile
            flock lockfile sleep 2 &
            sleep 0.5
            fails flock -n lockfile true
            wait
            flock -n lockfile true
            python3 -c '
            import fcntl, os, subprocess
            f = open("lockfile", "r+")
            fcntl.lockf(f, fcntl.LOCK_EX)
            r = subprocess.run(["python3", "-c", "import fcntl; f=open(\\"lockfile\\",\\"r+\\"); fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"])
            assert r.returncode != 0, "a second process got the fcntl lock"
            '
            """, in: mnt)
    }

    @Test func remountKeepsContentAndInodes() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        try await fixture.sh("""
            mkdir -p \(mnt)/a/b && head -c 3000000 /dev/urandom > r.bin && cp r.bin \(mnt)/a/b/r.bin
            echo hi > \(mnt)/a/hi.txt
            (cd \(mnt) && find . -printf '%p %i %s %m\\n' | sort) > before.txt
            """)
        try await fixture.unmount(mnt)
        try await fixture.mount()
        try await fixture.sh("""
            (cd \(mnt) && find . -printf '%p %i %s %m\\n' | sort) > after.txt
            diff before.txt after.txt
            cmp r.bin \(mnt)/a/b/r.bin
            """)
    }

    @Test func aFreshDeviceSeesPlaceholdersThenIdenticalContent() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            mkdir -p \(a)/photos && head -c 5000000 /dev/urandom > p.jpg && cp p.jpg \(a)/photos/p.jpg
            echo notes > \(a)/notes.txt && chmod 640 \(a)/notes.txt && touch -d '2020-01-01' \(a)/notes.txt
            setfattr -n user.color -v blue \(a)/notes.txt
            ubiqfs_bin=\(MountFixture.binary)
            $ubiqfs_bin sync \(a) --wait
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            test "$(stat -c '%s %b %a %Y' \(b)/photos/p.jpg)" = "5000000 0 644 $(stat -c %Y \(a)/photos/p.jpg)"
            test "$(stat -c '%s %b %a %Y' \(b)/notes.txt)" = "6 0 640 $(stat -c %Y \(a)/notes.txt)"
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/photos/p.jpg)" = placeholder
            cmp p.jpg \(b)/photos/p.jpg
            # Read through, it is local once its last blocks are on disk (in the background).
            for _ in $(seq 1 100); do [ "$(getfattr --only-values -n user.ubiqfs.state \(b)/photos/p.jpg)" = local ] && break; sleep 0.1; done
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/photos/p.jpg)" = local
            for _ in $(seq 1 100); do [ "$(stat -c %b \(b)/photos/p.jpg)" -gt 0 ] && break; sleep 0.1; done
            test "$(stat -c %b \(b)/photos/p.jpg)" -gt 0
            test "$(cat \(b)/notes.txt)" = notes
            test "$(getfattr --only-values -n user.color \(b)/notes.txt)" = blue
            # Live: changes on a reach b's programs without a command, past b's kernel caches.
            echo changed > \(a)/notes.txt && mv \(a)/photos \(a)/pictures
            for i in $(seq 1 100); do
                [ "$(cat \(b)/notes.txt)" = changed ] && [ -e \(b)/pictures/p.jpg ] && [ ! -e \(b)/photos ] && break
                sleep 0.1
            done
            test "$(cat \(b)/notes.txt)" = changed
            test ! -e \(b)/photos
            # A move is metadata only: the content b had stays local.
            test "$(stat -c %b \(b)/pictures/p.jpg)" -gt 0
            cmp p.jpg \(b)/pictures/p.jpg
            """)
        let status = try await fixture.sh("\(MountFixture.binary) status \(b)")
        #expect(status.contains("online"))
        #expect(status.contains("pending uploads: 0"))
    }

    /// Write-only descriptors write around the page cache: what another descriptor has
    /// cached or mapped of the file must show the new bytes at once, and a page written
    /// through a shared mapping before must not come back over them.
    @Test func writesThroughAWriteOnlyDescriptorReachCachedReaders() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            python3 -c '
            import mmap, os, sys
            path = sys.argv[1] + "/shared.bin"
            with open(path, "wb") as f: f.write(b"A" * 8192)
            writer = os.open(path, os.O_WRONLY)
            reader = os.open(path, os.O_RDONLY)
            assert os.pread(reader, 4, 0) == b"AAAA"
            view = mmap.mmap(reader, 8192, prot=mmap.PROT_READ)
            assert view[:4] == b"AAAA"
            os.pwrite(writer, b"BBBB", 0)
            assert os.pread(reader, 4, 0) == b"BBBB", os.pread(reader, 4, 0)
            assert view[:4] == b"BBBB", view[:4]
            both = os.open(path, os.O_RDWR)
            mapped = mmap.mmap(both, 8192)
            mapped[4096:4100] = b"MMMM"
            os.pwrite(writer, b"WWWW", 4096)
            mapped.flush()
            assert os.pread(reader, 4, 4096) == b"WWWW", os.pread(reader, 4, 4096)
            appender = os.open(path, os.O_WRONLY | os.O_APPEND)
            os.write(appender, b"tail")
            assert os.fstat(reader).st_size == 8196
            assert os.pread(reader, 4, 8192) == b"tail"
            ' \(a)
            cp \(a)/shared.bin copy.bin
            test "$(head -c 4 copy.bin)" = BBBB
            test "$(tail -c 4 copy.bin)" = tail
            """)
    }

    @Test func killedDaemonLosesNothingFsynced() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(bin) pause \(a)
            head -c 2000000 /dev/urandom > keep.bin
            python3 -c '
            import os, sys
            data = open("keep.bin", "rb").read()
            fd = os.open(sys.argv[1] + "/keep.bin", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, data); os.fsync(fd); os.close(fd)
            os.mkdir(sys.argv[1] + "/folder")
            dfd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(dfd); os.close(dfd)
            ' \(a)
            pid=$(\(bin) status \(a) --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
            kill -9 "$pid"
            while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
            # What the kernel must ask the daemon fails; cached listings may still show.
            fails stat -f \(a) 2> err
            grep -q "Transport endpoint is not connected" err
            fails cat \(a)/keep.bin > /dev/null 2> err
            grep -q "Transport endpoint is not connected" err
            # One command recovers the dead mount, and says so.
            \(bin) mount \(a) --store \(fixture.store) --state-dir \(fixture.root)/a.state --device a --poll-interval 0.5 2> recovered
            grep -q "was a dead mount" recovered
            """)
        try await fixture.sh("""
            cmp keep.bin \(a)/keep.bin
            test -d \(a)/folder
            \(bin) sync \(a) --wait
            \(bin) status \(a) | grep -q 'pending uploads: 0'
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("cmp keep.bin \(b)/keep.bin && test -d \(b)/folder")
    }

    /// A second state dir on this host gets a device name of its own by default, so the
    /// conflict copies of two devices on one host say whose they are.
    @Test func aSecondStateDirOnThisHostHasADistinctDefaultName() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let second = fixture.root + "/second"
        try await fixture.sh("""
            mkdir \(second)
            \(bin) mount \(second) --store \(fixture.store) --state-dir \(fixture.root)/second-state --poll-interval 0.5
            \(bin) status \(second) | grep -q "device: *$(hostname)-second-state$"
            \(bin) unmount \(second)
            """)
    }

    @Test func aReaderWaitingForADownloadCanBeInterrupted() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            # Past the inline limit (1 KiB): its bytes are in a pack of their own.
            head -c 3000 /dev/urandom > \(a)/slow.txt
            \(bin) sync \(a) --wait
            \(bin) unmount \(a)
            """)
        // A store that stops answering for content (`hang,blocks`): listings still work.
        let blocks = fixture.store + "/default/packs"
        let block = try #require(try FileManager.default.contentsOfDirectory(atPath: blocks).first)
        let b = try await fixture.mount("b", extra: ["--store-faults", "hang,blocks"])
        try await fixture.sh("""
            start=$(date +%s%N)
            timeout -s INT 2 cat \(b)/slow.txt 2> err && exit 1
            elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
            test "$elapsed" -lt 5000
            ls \(b) | grep -q slow.txt
            # The reader gave up; the fetch itself goes on for the next reader.
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/slow.txt)" = partial
            # The store answers again, with bytes that do not match the hash.
            echo wrong > \(blocks)/\(block)
            \(bin) faults \(b) off
            fails cat \(b)/slow.txt 2> err
            grep -q "Input/output error" err
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/slow.txt)" = error
            getfattr --only-values -n user.ubiqfs.error \(b)/slow.txt | grep -q "does not match its hash"
            """)
    }

    /// A store folder others can write may hold a FIFO where a pack belongs (issue 35): a
    /// read of the file fails at once as damaged, and the daemon keeps serving the rest.
    @Test func aFIFOInTheStoreIsRefusedNotWaitedOn() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            head -c 3000 /dev/urandom > \(a)/jammed.txt
            \(bin) sync \(a) --wait
            \(bin) unmount \(a)
            """)
        let packs = fixture.store + "/default/packs"
        let pack = try #require(try FileManager.default.contentsOfDirectory(atPath: packs).first)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            rm \(packs)/\(pack) && mkfifo \(packs)/\(pack)
            start=$(date +%s%N)
            fails timeout 20 cat \(b)/jammed.txt 2> err
            grep -q "Input/output error" err || { cat err >&2; false; }
            test $(( ($(date +%s%N) - start) / 1000000 )) -lt 15000
            getfattr --only-values -n user.ubiqfs.error \(b)/jammed.txt | grep -q "is a FIFO in the store folder"
            echo fine > \(b)/other.txt && \(bin) sync \(b) --wait
            \(bin) status \(b) > /dev/null
            """)
    }

    @Test func pinAndEvictThroughXattrs() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            mkdir \(a)/folder
            head -c 1500000 /dev/urandom > x.bin && cp x.bin \(a)/folder/x.bin
            echo top > \(a)/top.txt
            \(bin) sync \(a) --wait
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            state() { getfattr --only-values -n user.ubiqfs.state "$1"; }
            wait_for() { for i in $(seq 1 150); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out: $1" >&2; return 1; }
            test "$(state \(b)/folder/x.bin)" = placeholder
            test "$(getfattr --only-values -n user.ubiqfs.pinned \(b)/folder/x.bin)" = 0
            getfattr -d -m - \(b)/folder/x.bin 2>/dev/null | fails grep -q ubiqfs

            # Pinning a folder downloads what is inside, now and later.
            setfattr -n user.ubiqfs.pinned -v 1 \(b)/folder
            test "$(getfattr --only-values -n user.ubiqfs.pinned \(b)/folder/x.bin)" = 1
            wait_for '[ "$(state \(b)/folder/x.bin)" = local ]'
            head -c 300000 /dev/urandom > later.bin && cp later.bin \(a)/folder/later.bin
            \(bin) sync \(a) --wait
            wait_for '[ -e \(b)/folder/later.bin ] && [ "$(state \(b)/folder/later.bin)" = local ]'
            # A placeholder moved into the pinned folder is downloaded too.
            echo outside > \(a)/outside.txt && \(bin) sync \(a) --wait
            wait_for '[ -e \(b)/outside.txt ]'
            test "$(state \(b)/outside.txt)" = placeholder
            mv \(b)/outside.txt \(b)/folder/outside.txt
            wait_for '[ "$(state \(b)/folder/outside.txt)" = local ]'
            fails setfattr -n user.ubiqfs.evict -v 1 \(b)/folder/x.bin 2> err
            grep -q "Operation not permitted" err

            # Unpinned, a folder evict turns everything back into placeholders; reading restores it.
            setfattr -n user.ubiqfs.pinned -v 0 \(b)/folder
            setfattr -n user.ubiqfs.evict -v 1 \(b)/folder
            test "$(stat -c '%s %b' \(b)/folder/x.bin)" = "1500000 0"
            test "$(state \(b)/folder/later.bin)" = placeholder
            cmp x.bin \(b)/folder/x.bin
            for _ in $(seq 1 100); do [ "$(state \(b)/folder/x.bin)" = local ] && break; sleep 0.1; done
            test "$(state \(b)/folder/x.bin)" = local
            test "$(getfattr --only-values -n user.ubiqfs.progress \(b)/folder/x.bin)" = 100

            # Changes not uploaded yet are never evicted.
            \(bin) pause \(b)
            echo more >> \(b)/top.txt
            test "$(state \(b)/top.txt)" = pending
            fails setfattr -n user.ubiqfs.evict -v 1 \(b)/top.txt 2> err
            grep -q "Device or resource busy" err
            test "$(cat \(b)/top.txt)" = "$(printf 'top\nmore')"
            \(bin) resume \(b) && \(bin) sync \(b) --wait
            before=$(stat -c %z \(b)/top.txt)
            \(bin) evict \(b)/top.txt
            test "$(stat -c %b \(b)/top.txt)" = 0
            test "$(stat -c %z \(b)/top.txt)" != "$before"
            \(bin) status \(b)/top.txt | grep -q "state:.*placeholder"
            \(bin) status \(b)/folder/x.bin | grep -q "on this disk:.*1.4 MiB"
            before=$(stat -c %z \(b)/top.txt)
            \(bin) pin \(b)/top.txt
            test "$(stat -c %z \(b)/top.txt)" != "$before"

            # The command line is the same interface.
            \(bin) evict \(b)/folder
            \(bin) download \(b)/folder | tail -1 | grep -q "100%"
            test "$(state \(b)/folder/later.bin)" = local
            cmp later.bin \(b)/folder/later.bin
            fails setfattr -n user.ubiqfs.state -v x \(b)/top.txt 2>/dev/null
            """)
    }

    @Test func theCacheBudgetHoldsAndKeepsPinnedFiles() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            for i in 1 2 3 4 5 6; do head -c 1048576 /dev/urandom > f$i.bin; cp f$i.bin \(a)/f$i.bin; done
            \(bin) sync \(a) --wait
            """)
        let b = try await fixture.mount("b", extra: ["--cache-size", "3M"])
        try await fixture.sh("""
            cache() { \(bin) status \(b) --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cacheBytes"])'; }
            wait_for() { for i in $(seq 1 100); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out: $1 ($(cache))" >&2; return 1; }
            \(bin) pin \(b)/f1.bin
            wait_for '[ "$(getfattr --only-values -n user.ubiqfs.state \(b)/f1.bin)" = local ]'
            for i in 2 3 4 5 6; do cmp f$i.bin \(b)/f$i.bin; done
            wait_for '[ "$(cache)" -le 3145728 ]'
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/f1.bin)" = local
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/f2.bin)" = placeholder
            for i in 1 2 3 4 5 6; do cmp f$i.bin \(b)/f$i.bin; done
            wait_for '[ "$(cache)" -le 3145728 ]'
            \(bin) status \(b) | grep -q "of 3.0 MiB"
            """)
    }

    /// `sed -i` inserting a line at the top of 24 MiB of text (a new file renamed over the
    /// old one) grows the store by the chunks around the edit, not by the file: the first
    /// upload, the control, grows it by all of it. Another mount reads the edit exactly.
    @Test func aLineInsertedIntoALargeFileSendsOnlyTheChunksAroundIt() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            stored() { du -sb \(fixture.store) | cut -f1; }
            python3 -c "import base64, os; open('log.txt', 'wb').write(base64.encodebytes(os.urandom(18 << 20)))"
            before=$(stored)
            cp log.txt \(a)/log.txt && \(bin) sync \(a) --wait
            first=$(( $(stored) - before ))
            test "$first" -ge 25165824 || { echo "the first upload stored $first bytes" >&2; exit 1; }
            before=$(stored)
            sed -i '1i a new first line' \(a)/log.txt && \(bin) sync \(a) --wait
            edit=$(( $(stored) - before ))
            test "$edit" -lt 6291456 || { echo "a line inserted stored $edit bytes" >&2; exit 1; }
            sed '1i a new first line' log.txt > expected.txt
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("cmp expected.txt \(b)/log.txt")
    }

    /// An SQLite database edited in place on a real mount, three times (pages rewritten
    /// where they are, as SQLite does): each upload follows the writes since the last (only
    /// the chunks around them are read again, and the record says the blocks as a splice),
    /// and another mount reads a database SQLite finds intact, with every edited row, byte
    /// for byte the first mount's.
    @Test func aDatabaseEditedInPlaceReachesAnotherMountIntact() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            python3 -c "
            import os, sqlite3
            db = sqlite3.connect('\(a)/app.db')
            db.execute('CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)')
            db.executemany('INSERT INTO t VALUES (?, ?)', ((i, os.urandom(90).hex()) for i in range(100000)))
            db.commit()
            "
            \(bin) sync \(a) --wait
            for round in 1 2 3; do
                python3 -c "
            import sqlite3
            db = sqlite3.connect('\(a)/app.db')
            for i in range(10):
                db.execute('UPDATE t SET body = ? WHERE id = ?', ('edited $round %d' % i, i * 9973 + $round))
            db.commit()
            "
                \(bin) sync \(a) --wait
            done
            # Format 5: the last edit's record says the database's blocks as a splice, a
            # fraction of the first record's whole list (the control).
            records=$(grep -l '"name":"app.db"' \(fixture.store)/default/journal/* | sort)
            first=$(echo "$records" | head -1) last=$(echo "$records" | tail -1)
            grep -q '"splice":' "$last"
            test -z "$(grep -l '"splice":' "$first")"
            echo "records: $(stat -c %s "$first") bytes whole, $(stat -c %s "$last") as a splice"
            test $(( $(stat -c %s "$last") * 4 )) -lt $(stat -c %s "$first")
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            python3 -c "
            import sqlite3
            db = sqlite3.connect('file:\(b)/app.db?mode=ro', uri=True)
            assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
            for r in (1, 2, 3):
                for i in range(10):
                    assert db.execute('SELECT body FROM t WHERE id = ?', (i * 9973 + r,)).fetchone()[0] == 'edited %d %d' % (r, i)
            assert db.execute('SELECT count(*) FROM t').fetchone()[0] == 100000
            "
            cmp \(a)/app.db \(b)/app.db
            """)
    }

    /// A read in the middle of a large placeholder fetches the blocks it covers (and a
    /// little readahead), not the file; reading it all makes it local.
    @Test func aPlaceholderReadInTheMiddleFetchesWhatIsRead() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            head -c 134217728 /dev/urandom > big.bin && cp big.bin \(a)/big.bin
            \(bin) sync \(a) --wait
            dd if=big.bin of=expected.out bs=1M skip=40 count=1 status=none
            """)
        // Blocks (chunks of about 1 MiB, at most 4) at 0.3 s each.
        let b = try await fixture.mount("b", extra: ["--store-faults", "latency=300ms,blocks"])
        try await fixture.sh("""
            start=$(date +%s%N)
            dd if=\(b)/big.bin of=middle.out bs=1M skip=40 count=1 status=none
            elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/big.bin)" = partial
            test "$elapsed" -lt 2500 || { echo "the middle took $elapsed ms" >&2; exit 1; }
            cmp expected.out middle.out
            # The blocks read, what the kernel reads ahead, and ours (two windows of eight
            # times what was read, at least 8 MiB each, and the rest of a pack of about
            # 8 MiB): 1 to 32 MiB of 128.
            sleep 1
            blocks=$(stat -c %b \(b)/big.bin)
            test "$blocks" -ge 2048 && test "$blocks" -le 65536 || { echo "$blocks sectors here after a 1 MiB read" >&2; exit 1; }
            progress=$(getfattr --only-values -n user.ubiqfs.progress \(b)/big.bin)
            test "$progress" -ge 1 && test "$progress" -le 25 || { echo "progress $progress" >&2; exit 1; }
            cmp big.bin \(b)/big.bin
            for i in $(seq 1 100); do [ "$(getfattr --only-values -n user.ubiqfs.state \(b)/big.bin)" = local ] && break; sleep 0.1; done
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/big.bin)" = local
            test "$(stat -c %b \(b)/big.bin)" -ge 262144
            """)
    }

    @Test func mountRefusesClearly() async throws {
        let fixture = try MountFixture()
        let mnt = try await fixture.mount()
        let twice = try await MountFixture.run([MountFixture.binary, "mount", mnt, "--store", fixture.store, "--state-dir", fixture.root + "/other"], timeout: 30)
        #expect(twice.status != 0)
        #expect(twice.error.contains("already mounted"))
        try FileManager.default.createDirectory(atPath: fixture.root + "/second", withIntermediateDirectories: true)
        let sameState = try await MountFixture.run([MountFixture.binary, "mount", fixture.root + "/second", "--store", fixture.store, "--state-dir", fixture.root + "/mnt.state"], timeout: 30)
        #expect(sameState.status != 0)
        #expect(sameState.error.contains("another ubiqfs daemon"))
        let missing = try await MountFixture.run([MountFixture.binary, "mount", fixture.root + "/nope", "--store", fixture.store], timeout: 30)
        #expect(missing.status != 0)
        #expect(missing.error.contains("does not exist"))
    }

    @Test func pauseQueuesAndResumePushes() async throws {
        let fixture = try MountFixture()
        let a = try await fixture.mount("a")
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(bin) pause \(a)
            \(bin) status \(a) | grep -q paused
            echo queued > \(a)/queued.txt
            fails \(bin) sync \(a) --wait 2>/dev/null
            # The file, and the root's time its create moved.
            \(bin) status \(a) | grep -q 'pending uploads: 2'
            \(bin) resume \(a)
            \(bin) sync \(a) --wait
            \(bin) status \(a) | grep -q 'pending uploads: 0'
            \(bin) locks \(a) | grep -q "no leases held"
            # Any path inside the mount names it, as the mountpoint does.
            mkdir -p \(a)/deep/er
            \(bin) pause \(a)/deep/er
            \(bin) status \(a) | grep -q paused
            echo more > \(a)/deep/er/more.txt
            \(bin) resume \(a)/deep/er/more.txt
            \(bin) sync \(a)/deep --wait
            \(bin) status \(a) | grep -q 'pending uploads: 0'
            \(bin) locks \(a)/deep/er | grep -q "no leases held"
            """)
    }
}
