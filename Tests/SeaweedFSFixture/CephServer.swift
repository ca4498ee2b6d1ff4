import ContainerStore
import Foundation
import S3Store

/// A real Ceph RADOS Gateway (Debian's radosgw 16.2: one monitor, one memstore OSD, no
/// cephx) on 127.0.0.1, the second S3 implementation the store conformance suite and a
/// two-device sync run against (`Tests/Ceph/ceph-s3.sh`). Started once per test process;
/// a watchdog stops it when the process ends, however it ends.
public final class CephServer: Sendable {
    public let endpoint: String
    public let accessKey: String
    public let secretKey: String

    public static func shared() async throws -> CephServer {
        try await offThread { try sharedServer.get() }
    }

    private static let sharedServer: Result<CephServer, any Error> = Result { try CephServer.startBlocking() }

    private init(endpoint: String, accessKey: String, secretKey: String) {
        self.endpoint = endpoint
        self.accessKey = accessKey
        self.secretKey = secretKey
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Ceph/ceph-s3.sh").path

    private static func startBlocking() throws -> CephServer {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/radosgw") else {
            throw StoreError(code: .configuration, message: "Ceph's radosgw is not installed: run `\(script) install` (Packaging/test.sh does)")
        }
        let directory = "/tmp/ubiqfs-ceph-" + UUID().uuidString.prefix(8).lowercased()
        let ready = directory + ".env"
        let process = Process()
        // Through python3 to start with an empty signal mask (the test runner's threads block
        // signals); the watchdog stops the cluster once the test process is gone.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv('/bin/bash', sys.argv[1:])",
            "bash", "-c", """
            "$0" start "$1" > "$1.partial" 2> "$1.log" && mv "$1.partial" "$2" || { "$0" stop "$1"; exit 1; }
            while kill -0 $3 2>/dev/null; do sleep 0.5; done
            "$0" stop "$1"; rm -f "$2" "$1.log"
            """, script, directory, ready, String(getpid()),
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: ready, encoding: .utf8) {
                var values: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2 { values[parts[0]] = parts[1] }
                }
                if let endpoint = values["S3_ENDPOINT"], let access = values["S3_ACCESS_KEY"], let secret = values["S3_SECRET_KEY"] {
                    return CephServer(endpoint: endpoint, accessKey: access, secretKey: secret)
                }
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let log = (try? String(contentsOfFile: directory + ".log", encoding: .utf8)) ?? ""
        throw StoreError(code: .unreachable, message: "Ceph did not start: \(log.suffix(2000))")
    }

    /// A store for `container` under a bucket of this gateway (created if needed).
    public func store(bucket: String = "ubiqfs-tests", prefix: String = "", container: String) async throws -> S3Store {
        let environment = [
            "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey,
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
        ]
        let settings = try S3Settings.resolve(S3Location(bucket: bucket, prefix: prefix), environment: environment)
        let store = try S3Store(settings: settings, container: container)
        try await store.createBucket()
        return store
    }
}
