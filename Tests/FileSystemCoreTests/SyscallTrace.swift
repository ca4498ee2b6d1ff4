import Foundation
import Glibc
import Synchronization
import Testing

/// The system calls some threads of this test process make, as the kernel sees them:
/// strace attached to those threads alone (`-p TID`, never `-f`), with descriptors shown
/// as paths (`-y`). An oracle outside the code under test for what reaches the disk, and
/// in which order. Only the traced threads pay for ptrace: every other test running in
/// this process meanwhile goes at full speed.
final class SyscallTrace {
    private let pid: pid_t
    private let output: String

    /// Starts tracing `calls` (strace's `-e trace=` list) on `threads` and returns once
    /// each of them is traced.
    init(_ calls: String, threads: [pid_t]) throws {
        output = NSTemporaryDirectory() + "ubiqfs-strace-\(UUID().uuidString)"
        let targets = threads.flatMap { ["-p", String($0)] }
        pid = try Self.spawn(["/usr/bin/strace", "-y", "-qq", "-e", "trace=\(calls)", "-o", output] + targets)
        let deadline = Date().addingTimeInterval(60)
        while !threads.allSatisfy(Self.isTraced) {
            guard Date() < deadline, kill(pid, 0) == 0 else { throw TraceError() }
            usleep(10_000)
        }
    }

    /// Runs `body` on a thread of its own, traced alone, and returns its calls in order.
    static func of(_ calls: String, _ body: @escaping @Sendable () throws -> Void) async throws -> [String] {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let trace = try SyscallTrace(calls, threads: [currentThread()])
                    let outcome = Result { try body() }
                    let lines = trace.stop()
                    try outcome.get()
                    return lines
                })
            }.start()
        }
    }

    /// The kernel's id of the calling thread (what `-p` takes).
    static func currentThread() -> pid_t {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return pid_t(link.split(separator: "/").last ?? "") ?? getpid()
    }

    struct TraceError: Error, CustomStringConvertible {
        var description: String { "strace could not attach to the test's threads (is it installed, is ptrace allowed?)" }
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

    private static func isTraced(_ thread: pid_t) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/task/\(thread)/status", encoding: .utf8) else { return false }
        return status.split(separator: "\n").contains { $0.hasPrefix("TracerPid:") && !$0.hasSuffix("\t0") }
    }
}
