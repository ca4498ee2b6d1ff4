import Foundation
import Testing

/// Reads fetch what is read, on a real mount: `head` and `file` on many placeholders,
/// `touch` of one, `du`, and a download cut short by a killed daemon going on after it.
@Suite struct PartialReadMountTests {
    @Test func headsFileAndTouchFetchOnlyWhatTheyRead() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            mkdir \(a)/videos
            for i in $(seq 1 12); do head -c 33554432 /dev/urandom > \(a)/videos/v$i.bin; done
            printf '#!/bin/sh\\necho hello\\n' > \(a)/videos/run.sh
            \(bin) sync \(a) --wait
            """)
        let b = try await fixture.mount("b")
        try await fixture.sh("""
            for i in $(seq 1 12); do
                head -c 65536 \(b)/videos/v$i.bin > head.b
                head -c 65536 \(a)/videos/v$i.bin | cmp - head.b
            done
            file \(b)/videos/run.sh | grep -q "shell script"
            # 12 files of 32 MiB are 786432 sectors: the heads fetched their first
            # block (256 KiB) each, under 1%.
            total=0
            for i in $(seq 1 12); do total=$((total + $(stat -c %b \(b)/videos/v$i.bin))); done
            test "$total" -le 7864 || { echo "$total sectors here after 12 heads" >&2; exit 1; }
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/videos/v1.bin)" = partial
            test "$(getfattr --only-values -n user.ubiqfs.progress \(b)/videos/v1.bin)" = 0
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/videos/v12.bin)" = partial
            du -s --block-size=1K \(b)/videos | awk '{ exit !($1 <= 4096) }' || { du -s \(b)/videos >&2; exit 1; }
            # touch opens for writing and sets the times: it fetches nothing, and the new
            # time reaches the other device.
            touch -d '2020-01-02 03:04:05' \(b)/videos/v2.bin
            touch \(b)/videos/v5.bin
            for f in v2 v5; do
                here=$(stat -c %b \(b)/videos/$f.bin)
                test "$here" -le 512 || { echo "$here sectors of $f here after touch" >&2; exit 1; }
            done
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/videos/v2.bin)" != local
            \(bin) sync \(b) --wait
            \(bin) sync \(a) --wait
            test "$(stat -c %Y \(a)/videos/v2.bin)" = "$(date -d '2020-01-02 03:04:05' +%s)"
            # Reading a file through makes it local.
            cmp \(a)/videos/v3.bin \(b)/videos/v3.bin
            for _ in $(seq 1 100); do [ "$(getfattr --only-values -n user.ubiqfs.state \(b)/videos/v3.bin)" = local ] && break; sleep 0.1; done
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/videos/v3.bin)" = local
            for _ in $(seq 1 100); do [ "$(stat -c %b \(b)/videos/v3.bin)" -ge 65536 ] && break; sleep 0.1; done
            test "$(stat -c %b \(b)/videos/v3.bin)" -ge 65536
            """)
    }

    /// `ubiqfs download` of a large file from a slow store, the daemon killed half way:
    /// the next mount has the blocks fetched before (partial) and fetches only the rest.
    @Test func aDownloadCutShortByAKilledDaemonGoesOnWhereItWas() async throws {
        let fixture = try MountFixture()
        let bin = MountFixture.binary
        let a = try await fixture.mount("a")
        try await fixture.sh("""
            head -c 67108864 /dev/urandom > big.bin && cp big.bin \(a)/big.bin
            \(bin) sync \(a) --wait
            """)
        // Two block fetches at once, each a second: the download takes about ten seconds.
        let b = try await fixture.mount("b", extra: ["--store-faults", "latency=1s,blocks", "--transfers", "2"])
        let state = fixture.root + "/b.state"
        try await fixture.sh("""
            \(bin) download \(b)/big.bin > download.out 2>&1 &
            for _ in $(seq 1 100); do
                progress=$(getfattr --only-values -n user.ubiqfs.progress \(b)/big.bin 2>/dev/null || echo 0)
                [ "$progress" -ge 20 ] && break
                sleep 0.1
            done
            test "$progress" -ge 20 && test "$progress" -lt 100 || { echo "progress $progress" >&2; exit 1; }
            pkill -9 -f "[-]-state-dir=\(state) "
            wait || true
            umount -l \(b) 2>/dev/null || true
            """)
        let again = try await fixture.mount("b")
        try await fixture.sh("""
            test "$(getfattr --only-values -n user.ubiqfs.state \(again)/big.bin)" = partial
            here=$(stat -c %b \(again)/big.bin)
            test "$here" -ge 16384 || { echo "$here sectors kept" >&2; exit 1; }
            \(bin) download \(again)/big.bin > /dev/null
            test "$(getfattr --only-values -n user.ubiqfs.state \(again)/big.bin)" = local
            cmp big.bin \(again)/big.bin
            """)
    }
}
