import Foundation
import Testing
import ContainerStore
import ItemModel
import S3Store
import SeaweedFSFixture

/// What is particular to S3: signing, the AWS configuration rules, the service's errors
/// made clear, and the conditional-write check; against a real SeaweedFS server.
@Suite struct S3StoreTests {
    /// The "GET Object" example of the AWS Signature V4 documentation.
    @Test func signaturesMatchTheAWSExample() {
        let signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1"
        )
        let headers = signer.sign(
            method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt", query: [], headers: [("range", "bytes=0-9")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Date(timeIntervalSince1970: 1_369_353_600)
        )
        let authorization = headers.first { $0.0 == "authorization" }?.1
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(SigV4Signer.encode("a b/c~d+é", slash: false) == "a%20b/c~d%2B%C3%A9")
        #expect(SigV4Signer.encode("a/b", slash: true) == "a%2Fb")
    }

    @Test func settingsFollowTheAWSConventions() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-aws-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home + "/.aws", withIntermediateDirectories: true)
        try """
            [default]
            aws_access_key_id = FILEKEY
            aws_secret_access_key = FILESECRET
            [work]
            aws_access_key_id = WORKKEY
            aws_secret_access_key = WORKSECRET
            aws_session_token = WORKTOKEN
            """.write(toFile: home + "/.aws/credentials", atomically: true, encoding: .utf8)
        try """
            [default]
            region = eu-west-1
            [profile work]
            region = eu-central-1
            endpoint_url = http://127.0.0.1:8333
            s3 =
              addressing_style = path
            """.write(toFile: home + "/.aws/config", atomically: true, encoding: .utf8)
        let location = try S3Location(parsing: "s3://my-bucket/team/docs/")
        #expect(location == S3Location(bucket: "my-bucket", prefix: "team/docs"))

        let fromFiles = try S3Settings.resolve(location, environment: ["HOME": home])
        #expect(fromFiles.credentials.accessKeyID == "FILEKEY")
        #expect(fromFiles.region == "eu-west-1")
        #expect(fromFiles.host == "my-bucket.s3.eu-west-1.amazonaws.com")
        #expect(!fromFiles.pathStyle && fromFiles.scheme == "https")

        let profile = try S3Settings.resolve(location, environment: ["HOME": home, "AWS_PROFILE": "work"])
        #expect(profile.credentials.sessionToken == "WORKTOKEN")
        #expect(profile.region == "eu-central-1")
        #expect(profile.pathStyle && profile.host == "127.0.0.1" && profile.port == 8333 && profile.scheme == "http")

        let environment = try S3Settings.resolve(location, environment: [
            "HOME": home, "AWS_PROFILE": "work", "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "ENVSECRET",
            "AWS_REGION": "us-west-2", "AWS_ENDPOINT_URL": "http://other:9000", "AWS_ENDPOINT_URL_S3": "https://s3.example.com",
        ])
        #expect(environment.credentials.accessKeyID == "ENVKEY" && environment.credentials.sessionToken == nil)
        #expect(environment.region == "us-west-2")
        #expect(environment.host == "s3.example.com" && environment.scheme == "https")
        // The secret never shows in what is printed or logged.
        #expect(!"\(environment.credentials) \(environment.endpointDescription)".contains("ENVSECRET"))

        #expect(throws: StoreError.self) { try S3Settings.resolve(location, environment: ["HOME": home + "/nowhere"]) }
        for bad in ["s3://", "s3://UPPER/x", "s3://ab", "s3://bucket/../x", "/local/path"] {
            #expect(throws: StoreError.self) { try S3Location(parsing: bad) }
        }
    }

    /// Plain http to AWS would carry signed requests, names and a plain container's
    /// content in clear: refused unless asked for; elsewhere (but loopback) a warning.
    @Test func plainHTTPToAWSIsRefusedAndElsewhereWarned() throws {
        let location = try S3Location(parsing: "s3://my-bucket/x")
        let credentials = S3Credentials(accessKeyID: "K", secretAccessKey: "S", sessionToken: nil)
        func settings(_ endpoint: String?, allow: Bool = false) throws(StoreError) -> S3Settings {
            try S3Settings(location: location, credentials: credentials, region: "us-east-1", endpoint: endpoint, allowPlainHTTP: allow)
        }
        for aws in ["http://s3.us-east-1.amazonaws.com", "HTTP://my-bucket.S3.eu-west-1.AmazonAWS.com:80", "http://s3.cn-north-1.amazonaws.com.cn"] {
            do {
                _ = try settings(aws)
                Issue.record("\(aws) accepted")
            } catch {
                #expect(error.code == .configuration && error.message.contains("plain http"), "\(aws): \(error)")
            }
            #expect(try settings(aws, allow: true).plainHTTPWarning != nil)
        }
        #expect(try settings("https://s3.us-east-1.amazonaws.com").plainHTTPWarning == nil)
        #expect(try settings(nil).plainHTTPWarning == nil)
        #expect(try settings("http://minio.lan:9000").plainHTTPWarning?.contains("plain http") == true)
        #expect(try settings("http://127.0.0.1:8333").plainHTTPWarning == nil)
        #expect(try settings("http://localhost:8333").plainHTTPWarning == nil)
    }

    /// SeaweedFS and Ceph's RADOS Gateway both honour `If-None-Match: *`.
    @Test(arguments: ["seaweedfs", "ceph"]) func aConditionalWriteServiceIsVerified(service: String) async throws {
        let store = service == "ceph"
            ? try await CephServer.shared().store(prefix: "verify", container: "c")
            : try await SeaweedServer.shared().store(prefix: "verify", container: "c")
        try await store.verify()
        #expect(try await store.list(prefix: ".ubiqfs-probe/", startAfter: nil, limit: 10).isEmpty)
    }

    @Test func serviceErrorsAreClear() async throws {
        let server = try await SeaweedServer.shared()
        _ = try await server.store(container: "c")
        func store(_ environment: [String: String], bucket: String = "ubiqfs-tests") throws -> S3Store {
            var merged = server.environment
            merged.merge(environment) { $1 }
            var retry = S3RetryPolicy()
            retry.maxAttempts = 2
            return try S3Store(settings: S3Settings.resolve(S3Location(bucket: bucket), environment: merged), container: "c", retry: retry)
        }
        func failure(_ store: S3Store) async -> StoreError? {
            do {
                _ = try await store.get("container.json")
                return nil
            } catch {
                return error
            }
        }
        let wrongSecret = await failure(try store(["AWS_SECRET_ACCESS_KEY": "wrong"]))
        #expect(wrongSecret?.code == .accessDenied)
        #expect(wrongSecret?.message.contains("secret key does not match") == true)
        #expect(wrongSecret?.description.contains("wrong") == false)
        let unknownKey = await failure(try store(["AWS_ACCESS_KEY_ID": "nobody"]))
        #expect(unknownKey?.code == .accessDenied)
        let noBucket = await failure(try store([:], bucket: "no-such-bucket-here"))
        #expect(noBucket?.code == .configuration)
        #expect(noBucket?.message.contains("does not exist") == true)
        // Nothing listens there: unreachable, never "not found".
        let nowhere = await failure(try store(["AWS_ENDPOINT_URL": "http://127.0.0.1:9"]))
        #expect(nowhere?.code == .unreachable)
    }

    @Test func largeObjectsAndRangesRoundTrip() async throws {
        let store = try await SeaweedServer.shared().store(prefix: "large", container: "c")
        let bytes = (0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 12)) }
        try await store.put("blocks/big", bytes)
        #expect(try await store.get("blocks/big") == bytes)
        #expect(try await store.get("blocks/big", range: 5_000_000..<5_000_100) == Array(bytes[5_000_000..<5_000_100]))
        #expect(try await store.get("blocks/big", range: Int64(bytes.count)..<Int64(bytes.count + 10)).isEmpty)
        #expect(try await store.get("blocks/big", range: 10..<10).isEmpty)
        // Keys with characters that need encoding.
        try await store.put("blocks/a b+c", [1, 2])
        #expect(try await store.get("blocks/a b+c") == [1, 2])
        #expect(try await store.list(prefix: "blocks/", startAfter: nil, limit: 10) == ["blocks/a b+c", "blocks/big"])
    }

    /// A streamed read whose connection drops midway is asked again from the byte where it
    /// stopped: the caller gets every byte once, in order, and the link carries less than
    /// a restart would. Control: a whole `get` through the same breaking link starts over.
    @Test func aStreamBrokenMidwayResumesWhereItStopped() async throws {
        let server = try await SeaweedServer.shared()
        let direct = try await server.store(prefix: "cut", container: "c")
        let object = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ ($0 >> 9)) }
        try await direct.put("packs/p", object)
        func relayed() async throws -> (S3Store, CuttingRelay) {
            let relay = try CuttingRelay(to: UInt16(server.s3Port), cutAfter: 1 << 20, cuts: 2)
            var environment = server.environment
            environment["AWS_ENDPOINT_URL"] = "http://127.0.0.1:\(relay.port)"
            let settings = try S3Settings.resolve(S3Location(bucket: "ubiqfs-tests", prefix: "cut"), environment: environment)
            return (try S3Store(settings: settings, container: "c"), relay)
        }

        let (store, relay) = try await relayed()
        defer { relay.stop() }
        var received: [UInt8] = []
        var pieces = 0
        try await store.stream("packs/p", range: 0 ..< Int64(object.count)) { piece in
            received += piece
            pieces += 1
        }
        #expect(received == object)
        #expect(pieces > 3)
        #expect(relay.connections == 3)
        // What the client had taken off the socket but not handed on when the link broke is
        // asked again: less than one cut's worth in all.
        #expect(relay.replyBytes < object.count + (1 << 20), "\(relay.replyBytes) bytes carried for \(object.count)")

        let (control, controlRelay) = try await relayed()
        defer { controlRelay.stop() }
        #expect(try await control.get("packs/p") == object)
        #expect(controlRelay.connections == 3)
        #expect(controlRelay.replyBytes > object.count + (2 << 20) - (64 << 10))
    }

    /// An object larger than anything that may be at its key is refused from its declared
    /// size, before its body is read (a bucket others write could hold gigabytes there).
    @Test func anObjectTooLargeForItsKeyIsRefusedBeforeItIsRead() async throws {
        let store = try await SeaweedServer.shared().store(prefix: "huge", container: "c")
        let size = Int(ContainerLayout.largestObject(atKey: "blocks/huge")) + 1
        let bytes = [UInt8](repeating: 7, count: size)
        try await store.put("blocks/huge", bytes)
        do {
            _ = try await store.get("blocks/huge")
            Issue.record("a \(size)-byte block was read whole")
        } catch {
            #expect(error.code == .corrupt && error.message.contains("refused"), "\(error)")
        }
        // A range of it is still served: readers of a block ask for what they need.
        #expect(try await store.get("blocks/huge", range: 10..<20) == [UInt8](repeating: 7, count: 10))
    }

    /// Certificates are verified: a server whose certificate nothing trusts is refused as a
    /// setup problem (never retried as "offline"), and the message says TLS.
    @Test func anUntrustedCertificateIsRefused() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-tls-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/bin/sh")
        // A self-signed certificate, and an HTTPS server on a free port that prints the port.
        server.arguments = ["-c", """
            cd '\(dir)' && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 -subj /CN=127.0.0.1 2>/dev/null && exec python3 -c '
            import http.server, ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain("cert.pem", "key.pem")
            server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            '
            """]
        let output = Pipe()
        server.standardOutput = output
        try server.run()
        defer { server.terminate() }
        let port = try await offThread { () -> Int in
            let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw StoreError(code: .configuration, message: "no TLS test server: \(line)") }
            return port
        }
        let environment = ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "https://127.0.0.1:\(port)"]
        var retry = S3RetryPolicy()
        retry.maxAttempts = 2
        let store = try S3Store(settings: S3Settings.resolve(S3Location(bucket: "b"), environment: environment), container: "c", retry: retry)
        do {
            _ = try await store.get("container.json")
            Issue.record("a self-signed certificate was accepted")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.message.contains("TLS"))
        }
    }
}
