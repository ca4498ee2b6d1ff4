import Foundation
import SeaweedFSFixture
import Testing

/// A real mount of a real `ubiqfs` daemon in a temporary folder, driven by real programs.
/// The daemon runs in its own process (a process that serves a FUSE mount and uses it can
/// deadlock in the kernel). Every mount is unmounted on every path, even on failure.
final class MountFixture {
    let root: String
    let store: String
    private(set) var mounted: [String] = []

    init() throws {
        root = "/tmp/ubiqfs-test-" + UUID().uuidString.prefix(8).lowercased()
        store = root + "/store"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit {
        for mountpoint in mounted {
            _ = try? Self.runBlocking([Self.binary, "unmount", mountpoint], timeout: 60)
            _ = try? Self.runBlocking(["fusermount3", "-uz", mountpoint], timeout: 10)
        }
        _ = try? Self.runBlocking(["pkill", "-9", "-f", "--", "--state-dir[= ]" + root], timeout: 10)
        // Mounts a test made by other means (mount(8), a profile) that it could not undo.
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 2, fields[2] == "fuse.ubiqfs", fields[1].hasPrefix(root + "/") {
                _ = try? Self.runBlocking(["fusermount3", "-uz", String(fields[1])], timeout: 10)
            }
        }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The `ubiqfs` built beside the test bundle (or $UBIQFS_BIN).
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["UBIQFS_BIN"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("ubiqfs").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/ubiqfs").path
    }()

    /// Mounts the container at `root/NAME` with state in `root/NAME.state`; returns the mountpoint.
    @discardableResult
    func mount(
        _ name: String = "mnt", device: String? = nil, state: String? = nil, store: String? = nil,
        environment: [String: String] = [:], extra: [String] = [], launcher: [String] = []
    ) async throws -> String {
        let mountpoint = root + "/" + name
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let stateDir = root + "/" + (state ?? name + ".state")
        // `launcher` runs the command under another program (fiu-run injects I/O errors).
        let result = try await Self.run(launcher + [
            Self.binary, "mount", mountpoint, "--store", store ?? self.store, "--state-dir", stateDir,
            "--device", device ?? name, "--poll-interval", "0.5",
        ] + thumbnailCache(name, extra) + extra, environment: environment, timeout: 60)
        guard result.status == 0 else {
            throw FixtureError("mount failed (\(result.status)): \(result.error)")
        }
        mounted.append(mountpoint)
        return mountpoint
    }

    /// Each mount's own thumbnail cache, unless the test names one: never the user's.
    private func thumbnailCache(_ name: String, _ extra: [String]) -> [String] {
        extra.contains { $0.hasPrefix("--thumbnail-cache") } ? [] : ["--thumbnail-cache", root + "/" + name + ".thumbnails"]
    }

    func unmount(_ mountpoint: String) async throws {
        let result = try await Self.run([Self.binary, "unmount", mountpoint], timeout: 120)
        mounted.removeAll { $0 == mountpoint }
        guard result.status == 0 else { throw FixtureError("unmount failed: \(result.error)") }
    }

    /// `fails CMD ARGS...`: CMD must fail. A bare `! CMD` never stops a `set -e` script (bash
    /// exempts inverted commands), so an assertion written that way could not fail.
    /// No single quotes, so it can be embedded in a single-quoted `bash -c` script.
    static let failsHelper = #"fails() { if "$@"; then echo "expected to fail: $*" >&2; return 1; fi; }"#

    /// Names the command that stopped a script, so a silent `test` or `grep -q` says which.
    static let errTrap = #"trap 'echo "failed at script line $((LINENO - 2)): $BASH_COMMAND" >&2' ERR"#

    /// Runs a bash script in `directory`; fails the test with its output if it fails.
    /// The script may use `fails` (`failsHelper`).
    @discardableResult
    func sh(_ script: String, in directory: String? = nil, timeout: TimeInterval = 300, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let result = try await Self.run(["bash", "-euo", "pipefail", "-c", Self.failsHelper + "\n" + Self.errTrap + "\n" + script], directory: directory ?? root, timeout: timeout)
        if result.status != 0 {
            Issue.record("script failed (\(result.status)):\n\(script)\n--- stdout\n\(result.output)\n--- stderr\n\(result.error)", sourceLocation: sourceLocation)
            throw FixtureError("script failed")
        }
        return result.output
    }

    struct Result {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs a program to its end, waiting on a thread of its own (never the cooperative pool).
    static func run(_ arguments: [String], directory: String? = nil, environment: [String: String] = [:], timeout: TimeInterval) async throws -> Result {
        try await offThread { try runBlocking(arguments, directory: directory, environment: environment, timeout: timeout) }
    }

    static func runBlocking(_ arguments: [String], directory: String? = nil, environment: [String: String] = [:], timeout: TimeInterval) throws -> Result {
        let merged = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let result = try ChildProcess.run(arguments, directory: directory, environment: merged, timeout: timeout)
        let error = String(decoding: result.error, as: UTF8.self)
        return Result(
            status: result.status, output: String(decoding: result.output, as: UTF8.self),
            error: result.timedOut ? "timed out after \(timeout) s: \(arguments)\n" + error : error
        )
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
