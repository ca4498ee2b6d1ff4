import Foundation
import Glibc
import Testing

/// `--metrics`: two real mounts scraped with Prometheus's own text-format parser
/// (`prometheus_client`, PyPI) while they upload, download, make a conflict and lose
/// their store; `/healthz` turns 503 and back; bad addresses are refused.
@Suite struct MetricsMountTests {
    /// The repository this test was built from (the docs and packaging files it checks).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// A port nobody listens on now (bound to 0, read, closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw FixtureError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `m PORT MOUNT NAME[,LABEL=VALUE...]` prints a sample's value (the labels but `mount`,
    /// sorted), `sum PORT MOUNT PREFIX` the sum of the samples whose key starts so; every
    /// sample must carry `mount`. `gt A B`, `ge A B`: numeric comparisons.
    static let helpers = #"""
        waitfor() { for _ in $(seq 1 300); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out waiting for: $1" >&2; return 1; }
        cat > scrape.py <<'EOF'
        import json, sys, urllib.request
        from prometheus_client.parser import text_string_to_metric_families
        port, mount, mode, key = sys.argv[1:5]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as reply:
            assert reply.headers["content-type"].startswith("text/plain; version=0.0.4"), reply.headers["content-type"]
            text = reply.read().decode()
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                assert sample.labels.get("mount") == mount, sample
                labels = sorted((k, v) for k, v in sample.labels.items() if k != "mount")
                samples[",".join([sample.name] + [f"{k}={v}" for k, v in labels])] = sample.value
        if mode == "one":
            print(float(samples[key]) if key in samples else sys.exit(f"no sample {key} in:\n{text}"))
        else:
            print(float(sum(value for name, value in samples.items() if name.startswith(key))))
        EOF
        m() { python3 scrape.py "$1" "$2" one "$3"; }
        sum() { python3 scrape.py "$1" "$2" sum "$3"; }
        gt() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$1" "$2" || { echo "expected $1 > $2 ($3)" >&2; return 1; }; }
        ge() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2" || { echo "expected $1 >= $2 ($3)" >&2; return 1; }; }
        eq() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) == float(sys.argv[2]) else 1)' "$1" "$2" || { echo "expected $2, got $1 ($3)" >&2; return 1; }; }
        plus() { python3 -c 'import sys; print(float(sys.argv[1]) + float(sys.argv[2]))' "$1" "$2"; }
        """#

    @Test func twoMountsScrapedWhileTheyWork() async throws {
        let fixture = try MountFixture()
        let (pa, pb) = (try Self.freePort(), try Self.freePort())
        let a = try await fixture.mount("a", extra: ["--metrics", "127.0.0.1:\(pa)"])
        // A port alone listens on loopback.
        let b = try await fixture.mount("b", extra: ["--metrics", "\(pb)"])
        let bin = MountFixture.binary
        try await fixture.sh("""
            \(Self.helpers)
            curl -fsS http://127.0.0.1:\(pa)/healthz | grep -qx ok
            # An upload: bytes, objects and a commit counted, and the kernel's writes timed.
            up=$(m \(pa) \(a) ubiqfs_store_bytes_total,direction=up)
            commits=$(m \(pa) \(a) ubiqfs_commits_total)
            head -c 3145728 /dev/urandom > big.bin
            cp big.bin \(a)/big.bin
            \(bin) sync --wait \(a)
            ge "$(m \(pa) \(a) ubiqfs_store_bytes_total,direction=up)" "$(plus "$up" 3145728)" "bytes up"
            gt "$(m \(pa) \(a) ubiqfs_commits_total)" "$commits" "commits"
            gt "$(m \(pa) \(a) ubiqfs_commit_duration_seconds_count)" 0 "commit durations"
            gt "$(m \(pa) \(a) ubiqfs_fuse_request_duration_seconds_count,operation=write)" 0 "write timings"
            errors=$(m \(pa) \(a) ubiqfs_fuse_request_errors_total)
            fails getfattr -n user.no-such-attribute \(a)/big.bin 2>/dev/null
            gt "$(m \(pa) \(a) ubiqfs_fuse_request_errors_total)" "$errors" "error replies"
            gt "$(m \(pa) \(a) ubiqfs_store_request_duration_seconds_count,operation=put_if_absent)" 0 "record puts"
            eq "$(m \(pa) \(a) ubiqfs_pending_changes)" 0.0 "ubiqfs_pending_changes"
            eq "$(m \(pa) \(a) ubiqfs_oldest_pending_change_age_seconds)" 0.0 "ubiqfs_oldest_pending_change_age_seconds"
            # A download on the other device, which then stands where the first does.
            down=$(m \(pb) \(b) ubiqfs_store_bytes_total,direction=down)
            waitfor 'test -e \(b)/big.bin'
            cmp big.bin \(b)/big.bin
            ge "$(m \(pb) \(b) ubiqfs_store_bytes_total,direction=down)" "$(plus "$down" 3145728)" "bytes down"
            gt "$(m \(pb) \(b) ubiqfs_fuse_request_duration_seconds_count,operation=read)" 0 "read timings"
            \(bin) sync --wait \(b)
            eq "$(m \(pb) \(b) ubiqfs_journal_position)" "$(m \(pa) \(a) ubiqfs_journal_position)" "journal position"
            eq "$(m \(pb) \(b) ubiqfs_journal_behind_records)" 0.0 "ubiqfs_journal_behind_records"
            ge "$(m \(pb) \(b) ubiqfs_items)" 2 "items"
            gt "$(m \(pb) \(b) ubiqfs_last_sync_timestamp_seconds)" "$(plus "$(date +%s)" -60)" "last sync"
            # A device that does not pull while the other commits three records is three behind.
            \(bin) pause \(b)
            for n in 1 2 3; do echo $n > \(a)/lag-$n.txt; \(bin) sync --wait \(a); done
            eq "$(m \(pb) \(b) ubiqfs_journal_behind_records)" 3 "records behind"
            \(bin) resume \(b)
            \(bin) sync --wait \(b)
            eq "$(m \(pb) \(b) ubiqfs_journal_behind_records)" 0 "records behind"
            eq "$(m \(pb) \(b) ubiqfs_journal_position)" "$(m \(pa) \(a) ubiqfs_journal_position)" "journal position"
            # A change that waits: counted, and its age grows until it is committed.
            \(bin) pause \(a)
            echo waiting > \(a)/waiting.txt
            sleep 2.2
            ge "$(m \(pa) \(a) ubiqfs_pending_changes)" 1 "pending"
            ge "$(m \(pa) \(a) ubiqfs_oldest_pending_change_age_seconds)" 2 "age"
            \(bin) resume \(a)
            \(bin) sync --wait \(a)
            eq "$(m \(pa) \(a) ubiqfs_oldest_pending_change_age_seconds)" 0.0 "ubiqfs_oldest_pending_change_age_seconds"
            # A conflict: both edit one file while paused; the device that pulls the other's
            # version over its own edit makes the copy.
            echo base > \(a)/report.txt
            \(bin) sync --wait \(a)
            waitfor '[ "$(cat \(b)/report.txt 2>/dev/null)" = base ]'
            conflicts=$(m \(pa) \(a) ubiqfs_conflicts_total)
            \(bin) pause \(a)
            \(bin) pause \(b)
            echo "a's edit" > \(a)/report.txt
            echo "b's edit" > \(b)/report.txt
            \(bin) resume \(b)
            \(bin) sync --wait \(b)
            \(bin) resume \(a)
            \(bin) sync --wait \(a)
            eq "$(m \(pa) \(a) ubiqfs_conflicts_total)" "$(plus "$conflicts" 1)" conflicts
            eq "$(m \(pb) \(b) ubiqfs_conflicts_total)" 0.0 "ubiqfs_conflicts_total"
            # The store lost: /healthz says why with a 503, the failures are counted by kind,
            # and both come back with the store.
            errors=$(sum \(pa) \(a) ubiqfs_store_errors_total)
            \(bin) faults \(a) errors=1
            echo offline > \(a)/offline.txt
            # (The probe's answer is kept for 2 s, however often the check runs.)
            waitfor '[ "$(curl -s -o healthz.txt -w "%{http_code}" http://127.0.0.1:\(pa)/healthz)" = 503 ]'
            grep -q 'does not answer: injected fault' healthz.txt
            eq "$(m \(pa) \(a) ubiqfs_store_up)" 0.0 "ubiqfs_store_up"
            gt "$(sum \(pa) \(a) 'ubiqfs_store_errors_total,kind=unreachable')" "$errors" "store errors"
            \(bin) faults \(a) off
            waitfor 'curl -fsS http://127.0.0.1:\(pa)/healthz >/dev/null'
            eq "$(m \(pa) \(a) ubiqfs_store_up)" 1.0 "ubiqfs_store_up"
            \(bin) sync --wait \(a)
            eq "$(m \(pa) \(a) ubiqfs_pending_changes)" 0.0 "ubiqfs_pending_changes"
            # Only the two paths are served.
            test "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:\(pa)/other)" = 404
            # Every metric the shipped dashboard, alert rules and INSTALL.md name is served.
            curl -fsS http://127.0.0.1:\(pa)/metrics > served.txt
            for file in \(Self.repository)/Packaging/grafana/ubiqfs-dashboard.json \(Self.repository)/Packaging/prometheus/ubiqfs-alerts.yml \(Self.repository)/docs/INSTALL.md; do
                for name in $(grep -o 'ubiqfs_[a-z][a-z0-9_]*' "$file" | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
                    grep -Eq "^$name(_bucket|_sum|_count)?[{ ]" served.txt || { echo "$file names $name, which is not served" >&2; exit 1; }
                done
            done
            """)
        // Unmounting: the last push (slow here) runs with the mount gone, and says so.
        try await fixture.sh("""
            \(Self.helpers)
            \(bin) faults \(a) latency=1500ms
            echo late > \(a)/late.txt
            \(bin) unmount \(a) > unmount.log 2>&1 &
            waitfor 'curl -s http://127.0.0.1:\(pa)/healthz | grep -q "does not serve requests"'
            test "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:\(pa)/healthz)" = 503
            wait
            fails curl -fsS http://127.0.0.1:\(pa)/healthz
            """)
    }

    @Test func aBadAddressIsRefusedClearly() async throws {
        let fixture = try MountFixture()
        let port = try Self.freePort()
        let a = try await fixture.mount("a", extra: ["--metrics", "127.0.0.1:\(port)"])
        for (address, message) in [("70000", "a port from 1 to 65535"), ("host name:9", "is no host name or address"), (":9", "no host before the port"),
                                   ("::1:9", "IPv6 address in brackets"), ("127.0.0.1:\(port)", "cannot serve metrics on 127.0.0.1:\(port)")] {
            let mountpoint = fixture.root + "/c"
            try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
            let result = try await MountFixture.run(
                [MountFixture.binary, "mount", mountpoint, "--store", fixture.store, "--state-dir", fixture.root + "/c.state", "--metrics", address], timeout: 60)
            #expect(result.status != 0, "--metrics \(address) mounted")
            #expect(result.error.contains(message), "--metrics \(address): \(result.error)")
        }
        try await fixture.sh("""
            curl -fsS http://127.0.0.1:\(port)/healthz | grep -qx ok
            touch \(a)/still-served
            """)
    }
}
