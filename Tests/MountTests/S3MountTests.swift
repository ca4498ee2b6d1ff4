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
            ! grep -rq '\(SeaweedServer.secretKey)' \(fixture.root)/a.state/ubiqfs.log
            ! \(bin) status \(a) --json | grep -q '\(SeaweedServer.secretKey)'
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
