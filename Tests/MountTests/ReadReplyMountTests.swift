import Foundation
import Testing

/// Reads are answered from the cache file, spliced into the kernel's reply: direct reads of
/// every size class (empty, under the two pages below which they are copied, a page,
/// 128 KiB, over 1 MiB), near the end of the file and past it (the kernel cuts those at the
/// file's size), and buffered reads (whose readahead asks past the end), checked against
/// the same bytes in a native folder, on a local file and on a placeholder that fetches as
/// it is read.
@Suite struct ReadReplyMountTests {
    @Test func directReadsOfEverySizeMatchANativeCopy() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let mnt = try await fixture.mount()
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let script = """
            cat > reads.py <<'PY'
            \(Self.readsScript)
            PY
            native="\(fixture.root)/native"; mkdir -p "$native"
            daemon=$(pgrep -f -- "--state-dir[= ]\(fixture.root)/mnt.state" | head -1)
            test -n "$daemon" -a -d /proc/$daemon/fd
            python3 reads.py write \(seed) \(mnt)/file.bin "$native/file.bin"
            # The checker is fair: a native copy one byte off is caught.
            cp "$native/file.bin" off.bin
            printf 'X' | dd of=off.bin bs=1 seek=2000000 conv=notrunc status=none
            fails python3 reads.py check \(seed) \(mnt)/file.bin off.bin small
            # Reads under two pages are copied: no pipe for splicing yet.
            pipes() { find /proc/$daemon/fd -ignore_readdir_race -lname 'pipe:*' 2>/dev/null | wc -l; }
            before=$(pipes)
            python3 reads.py check \(seed) \(mnt)/file.bin "$native/file.bin" small
            test "$(pipes)" = "$before" || { echo "a pipe appeared for small reads: $before -> $(pipes)" >&2; exit 1; }
            python3 reads.py check \(seed) \(mnt)/file.bin "$native/file.bin" any
            test "$(pipes)" -gt "$before" || { echo "no pipe for splicing after large reads ($before)" >&2; exit 1; }
            # Buffered reads: the kernel's readahead asks past the end of the file.
            cmp "$native/file.bin" \(mnt)/file.bin
            \(bin) sync \(mnt) --wait
            setfattr -n user.ubiqfs.evict -v 1 \(mnt)/file.bin
            test "$(getfattr --only-values -n user.ubiqfs.state \(mnt)/file.bin)" = placeholder
            python3 reads.py check \(seed) \(mnt)/file.bin "$native/file.bin" any
            setfattr -n user.ubiqfs.evict -v 1 \(mnt)/file.bin
            cmp "$native/file.bin" \(mnt)/file.bin
            """
        do { try await fixture.sh(script) } catch {
            Issue.record("replay with UBIQFS_RANDOM_SEED=\(seed)")
            throw error
        }
    }

    /// A read of the cache file that comes back short or fails is never a short reply, which
    /// the kernel would take for the file's end: libfiu in the daemon cuts its `pread`s short
    /// at random, then fails them (reads under two pages are copied with `pread`).
    @Test func aCacheFileThatReadsShortOrFailsNeverEndsTheFileEarly() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let m = try await fixture.mount("m", launcher: ["fiu-run", "-x"])
        try await fixture.sh("""
            head -c 1000000 /dev/urandom > native.bin
            cp native.bin \(m)/f.bin
            \(bin) sync \(m) --wait
            pid=$(\(bin) status \(m) --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
            cat > faults.py <<'PY'
            import errno, os, subprocess, sys
            mounted, native, pid = sys.argv[1], sys.argv[2], sys.argv[3]
            expected = open(native, "rb").read()
            fd = os.open(mounted, os.O_RDONLY | os.O_DIRECT)
            def fiu(command):
                subprocess.run(["fiu-ctrl", "-c", command, pid], check=True)
            fiu("enable name=posix/io/rw/pread/reduce")
            try:
                for offset in range(0, len(expected), 8000):
                    got = os.pread(fd, 8000, offset)
                    assert got == expected[offset:offset + 8000], f"{len(got)} bytes at {offset} with short preads"
            finally:
                fiu("disable name=posix/io/rw/pread/reduce")
            fiu("enable name=posix/io/rw/pread,failinfo=5")
            try:
                os.pread(fd, 4096, 4096)
                sys.exit("a read succeeded while every pread failed")
            except OSError as error:
                assert error.errno == errno.EIO, error
            finally:
                fiu("disable name=posix/io/rw/pread")
            assert os.pread(fd, 4096, 4096) == expected[4096:8192]
            PY
            # Sync paused: the daemon's own database reads meet no fault meanwhile.
            \(bin) pause \(m)
            python3 faults.py \(m)/f.bin native.bin "$pid"
            \(bin) resume \(m)
            cmp native.bin \(m)/f.bin
            """)
        try await fixture.unmount(m)
    }

    /// `write SEED MOUNTED NATIVE`: the same random file in both. `check SEED MOUNTED NATIVE
    /// small|any`: 400 direct reads of the mounted file (each one kernel request of exactly
    /// that range) must return what the native file holds there; `small` keeps them under
    /// two pages.
    static let readsScript = #"""
        import os, random, sys

        mode, seed, mounted, native = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        rng = random.Random(seed)
        size = 3 * 1024 * 1024 + 12345
        if mode == "write":
            data = rng.randbytes(size)
            for path in (mounted, native):
                with open(path, "wb") as f:
                    f.write(data)
            sys.exit(0)
        small = sys.argv[5] == "small"
        expected = open(native, "rb").read()
        lengths = [0, 1, 100, 4095, 4096, 8191] if small else \
            [0, 1, 4096, 8191, 8192, 8193, 65536, 131072, 131073, 1 << 20, (1 << 20) + 5, 2 << 20]
        fd = os.open(mounted, os.O_RDONLY | os.O_DIRECT)
        for i in range(400):
            length = rng.choice(lengths) if rng.random() < 0.7 else rng.randrange(0, 8192 if small else 3 << 20)
            where = rng.random()
            if where < 0.2:
                offset = max(0, size - length + rng.randrange(-5000, 5000))
            elif where < 0.25:
                offset = size + rng.randrange(0, 100000)
            else:
                offset = rng.randrange(0, size)
            got = os.pread(fd, length, offset)
            if got != expected[offset:offset + length]:
                print(f"read {i}: {length} bytes at {offset}: {len(got)} came, not the {len(expected[offset:offset + length])} expected "
                      f"(first difference at {next((j for j, (a, b) in enumerate(zip(got, expected[offset:])) if a != b), None)})", file=sys.stderr)
                sys.exit(1)
        # Every byte once, in reads of the largest size.
        step, offset = (4096 if small else 1 << 20), 0
        while offset < size:
            got = os.pread(fd, step, offset)
            if got != expected[offset:offset + step]:
                print(f"sequential read at {offset} differs", file=sys.stderr)
                sys.exit(1)
            offset += len(got) or size
        os.close(fd)
        """#
}
