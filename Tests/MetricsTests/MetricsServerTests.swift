import Foundation
@testable import MetricsHTTP
import Testing

@Suite struct MetricsServerTests {
    @Test func addressesAreLoopbackUnlessNamed() throws {
        #expect(try MetricsAddress(parsing: "9464") == MetricsAddress(parsing: "127.0.0.1:9464"))
        #expect(try MetricsAddress(parsing: "9464").host == "127.0.0.1")
        #expect(try MetricsAddress(parsing: "0.0.0.0:9464").host == "0.0.0.0")
        #expect(try MetricsAddress(parsing: "[::1]:9464").host == "::1")
        #expect(try MetricsAddress(parsing: "[::1]:9464").description == "[::1]:9464")
        #expect(try MetricsAddress(parsing: "metrics.lan:80").host == "metrics.lan")
        for bad in ["", "0", "65536", "x", "host:", ":9464", "::1:9464", "[::1]9464", "a b:1", "1.2.3.4:-1"] {
            #expect(throws: MetricsAddress.Invalid.self, "\(bad)") { try MetricsAddress(parsing: bad) }
        }
    }

    /// A real server on a port the kernel picks, asked by curl.
    @Test func servesGetAndHeadAndRefusesTheRest() async throws {
        let server = try MetricsServer(MetricsAddress(host: "127.0.0.1", port: 0)) { path in
            path == "/metrics" ? .init(status: 200, contentType: "text/plain; version=0.0.4", body: "a 1\n") : .init(status: 503, body: "down: \(path)\n")
        }
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.boundPort)"
        #expect(try await curl(["-s", "-i", base + "/metrics?x=1"]).contains("HTTP/1.1 200 OK"))
        #expect(try await curl(["-s", base + "/metrics"]) == "a 1\n")
        #expect(try await curl(["-s", base + "/healthz"]) == "down: /healthz\n")
        #expect(try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", base + "/healthz"]) == "503")
        #expect(try await curl(["-s", "-I", base + "/metrics"]).contains("content-length: 4"))
        #expect(try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", base + "/metrics"]) == "405")
        // A second server on the same port is refused with the address in the message.
        #expect { try MetricsServer(try MetricsAddress(parsing: "127.0.0.1:\(server.boundPort)")) { _ in .init(status: 200, body: "") } } throws: { error in
            "\(error)".contains("cannot serve metrics on 127.0.0.1:\(server.boundPort)")
        }
    }

    /// curl on a thread of its own: waiting for it on the cooperative pool would hold a
    /// thread the server's answer needs (two, on a 2-core machine).
    private func curl(_ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                do { continuation.resume(returning: try Self.runCurl(arguments)) } catch { continuation.resume(throwing: error) }
            }.start()
        }
    }

    private static func runCurl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        // A bound for a server that never answers, not a timing: under the suite's load the
        // first answer once took more than 10 s.
        process.arguments = ["--max-time", "60"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
