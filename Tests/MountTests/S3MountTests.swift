import Foundation
import SeaweedFSFixture
import Testing

/// Mounts whose container is in a real S3 service (SeaweedFS on 127.0.0.1), configured
/// as a user would: AWS_* variables and `--store s3://BUCKET/PREFIX`.
@Suite struct S3MountTests {
    @Test func twoMountsShareAContainerInABucket() async throws {
        let server = try await SeaweedServer.shared()
        _ = try await server.store(container: "probe")
        let fixture = try MountFixture()
        let address = "s3://ubiqfs-tests/mounts-\(UUID().uuidString.prefix(8))"
        let a = try await fixture.mount("a", store: address, environment: server.environment)
        let b = try await fixture.mount("b", store: address, environment: server.environment)
        let bin = MountFixture.binary
        try await fixture.sh("""
            waitfor() { for _ in $(seq 1 150); do if eval "$1"; then return 0; fi; sleep 0.1; done; echo "timed out: $1" >&2; return 1; }
            head -c 9000000 /dev/urandom > big.bin
            mkdir \(a)/docs && cp big.bin \(a)/docs/ && echo "over S3" > \(a)/docs/note.txt
            \(bin) sync --wait \(a)
            \(bin) status \(a) | grep -q 's3://ubiqfs-tests/mounts-'
            # b polls the bucket (no inotify there): within a few seconds.
            waitfor '[ "$(cat \(b)/docs/note.txt 2>/dev/null)" = "over S3" ]'
            test "$(getfattr --only-values -n user.ubiqfs.state \(b)/docs/big.bin)" = placeholder
            cmp big.bin \(b)/docs/big.bin
            echo "edited on b" > \(b)/docs/note.txt && \(bin) sync --wait \(b)
            waitfor '[ "$(cat \(a)/docs/note.txt)" = "edited on b" ]'
            # No secret in what the daemon shows or logs.
            fails grep -rq '\(SeaweedServer.secretKey)' \(fixture.root)/a.state/ubiqfs.log
            \(bin) status \(a) --json | fails grep -q '\(SeaweedServer.secretKey)'
            """)
    }

    /// `ubiqfs doctor` against a real S3 service: every check passes, the conditional-write
    /// probe included, and it leaves no probe object behind.
    @Test func doctorPassesOnSeaweedFS() async throws {
        let server = try await SeaweedServer.shared()
        _ = try await server.store(container: "probe")
        let fixture = try MountFixture()
        let prefix = "doctor-\(UUID().uuidString.prefix(8))"
        let exports = server.environment.map { "export \($0.key)='\($0.value)'" }.sorted().joined(separator: "\n")
        try await fixture.sh("""
            \(exports)
            mkdir m
            \(MountFixture.binary) doctor m --store s3://ubiqfs-tests/\(prefix) --state-dir d.state > out
            grep -q "ok    conditional writes: the service honours conditional writes" out
            grep -q "all checks passed" out
            """)
        // Nothing left in the bucket: no probe, no container (doctor creates none).
        let left = try await server.store(prefix: prefix, container: "default").listAll(prefix: "")
        #expect(left.isEmpty)
    }

    /// rclone's S3 server ignores If-None-Match (real-servers.md): doctor says so with the
    /// fix, and a mount is refused, so two devices can never overwrite each other's commits.
    @Test func aServiceIgnoringConditionalWritesIsRefused() async throws {
        let fixture = try MountFixture()
        try await fixture.sh("""
            mkdir -p served/bucket m
            port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
            rclone serve s3 --auth-key AKEY,SKEY --addr 127.0.0.1:$port served > rclone.log 2>&1 &
            server=$!
            trap 'kill $server 2>/dev/null || true' EXIT
            for _ in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
            export AWS_ACCESS_KEY_ID=AKEY AWS_SECRET_ACCESS_KEY=SKEY AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:$port
            fails \(MountFixture.binary) doctor m --store s3://bucket/team --state-dir d.state --timeout 10 > out
            grep -q "ok    store: s3://bucket/team/default at http://127.0.0.1:$port is reachable" out
            grep -q "FAIL  conditional writes: http://127.0.0.1:$port does not honour conditional writes" out
            grep -q "fix: use a service that honours If-None-Match" out
            fails \(MountFixture.binary) mount m --store s3://bucket/team --state-dir d.state 2> err
            grep -q "does not honour conditional writes" err
            fails grep -q " \(fixture.root)/m " /proc/mounts
            """)
    }

    @Test func aServiceIgnoringTheCredentialsIsRefusedClearly() async throws {
        let server = try await SeaweedServer.shared()
        _ = try await server.store(container: "probe")
        let fixture = try MountFixture()
        var environment = server.environment
        environment["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        do {
            try await fixture.mount("a", store: "s3://ubiqfs-tests/denied", environment: environment)
            Issue.record("mounted with a wrong secret key")
        } catch {
            #expect("\(error)".contains("secret key does not match"))
            #expect(!"\(error)".contains("not-the-secret"))
        }
    }
}
