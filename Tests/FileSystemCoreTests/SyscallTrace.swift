import Foundation
import Glibc
import Testing

/// The system calls this test process makes, as the kernel sees them: strace attached to
/// every thread of the process (`-f -p`), with descriptors shown as paths (`-y`). An
/// oracle outside the code under test for what reaches the disk, and in which order.
final class SyscallTrace {
    private let pid: pid_t
    private let output: String

    /// Starts tracing `calls` (strace's `-e trace=` list) and returns once every thread
    /// of this process is traced.
    init(_ calls: String) throws {
        output = NSTemporaryDirectory() + "ubiqfs-strace-\(UUID().uuidString)"
        pid = try Self.spawn(["/usr/bin/strace", "-f", "-y", "-qq", "-e", "trace=\(calls)", "-o", output, "-p", String(getpid())])
        let deadline = Date().addingTimeInterval(10)
        while !Self.everyThreadTraced() {
            guard Date() < deadline, kill(pid, 0) == 0 else { throw TraceError() }
            usleep(10_000)
        }
    }

    struct TraceError: Error, CustomStringConvertible {
        var description: String { "strace could not attach to the test process (is it installed, is ptrace allowed?)" }
    }

    /// Detaches and returns one line per call, in the order the calls were made.
    func stop() -> [String] {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        defer { unlink(output) }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// With an empty signal mask: a thread of the test runner blocks most signals, and a
    /// child started from it would inherit that and never see the SIGTERM that detaches it.
    private static func spawn(_ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], nil, &attributes, &argv, environ) == 0 else { throw TraceError() }
        return pid
    }

    private static func everyThreadTraced() -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return !tasks.isEmpty && tasks.allSatisfy { task in
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8) else { return true }
            return status.split(separator: "\n").contains { $0.hasPrefix("TracerPid:") && !$0.hasSuffix("\t0") }
        }
    }
}
