import Foundation
import Glibc
import Synchronization

/// Runs a program niced, with a deadline, without blocking Swift's cooperative pool: the
/// exit arrives through `terminationHandler` into a continuation (`waitUntilExit` would hold
/// a pool thread for the whole run). Foundation starts each child in a process group of its
/// own, so a timeout or a cancellation kills the group: bwrap and what it started, or a
/// thumbnailer script and its children.
enum ChildProcess {
    struct Exit: Sendable {
        var status: Int32
        /// The end of what it wrote to stderr, for the error message.
        var errors: String
    }

    /// Runs `nice -n 19 arguments…` with stdin and stdout on /dev/null and stderr kept in
    /// `errorFile`; throws `.thumbnailerFailed` if it cannot start, `.timedOut` if it runs
    /// out of time.
    static func run(_ arguments: [String], errorFile: String, timeout: Duration) async throws(ThumbnailError) -> Exit {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProgramSearch.find("nice") ?? "/usr/bin/nice")
        process.arguments = ["-n", "19"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard FileManager.default.createFile(atPath: errorFile, contents: nil), let errors = FileHandle(forWritingAtPath: errorFile) else {
            throw ThumbnailError(code: .io, message: "cannot create \(errorFile)")
        }
        process.standardError = errors
        let watch = Watch()
        // A dispatch timer, not a sleeping Task: a cooperative pool kept busy by others must
        // not keep a hung thumbnailer alive past its time.
        let watchdog = DispatchWorkItem { watch.kill(timedOut: true) }
        let (seconds, attoseconds) = max(timeout, .zero).components
        let nanoseconds = Int(min(seconds, 86_400)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: watchdog)
        defer { watchdog.cancel() }
        let status: Int32
        do {
            status = try await withTaskCancellationHandler {
                try await exit(of: process, watch: watch)
            } onCancel: {
                watch.kill()
            }
        } catch {
            try? errors.close()
            throw ThumbnailError(code: .thumbnailerFailed, message: "cannot run \(arguments.first ?? "")", cause: error)
        }
        try? errors.close()
        let tail = String(decoding: (CacheFiles.read(errorFile) ?? []).suffix(2000), as: UTF8.self)
        if watch.timedOut {
            throw ThumbnailError(code: .timedOut, message: "\(arguments.joined(separator: " ")) took more than \(timeout): killed; stderr: \(tail)")
        }
        return Exit(status: status, errors: tail)
    }

    /// The exit status, once the process has ended.
    private static func exit(of process: Process, watch: Watch) async throws -> Int32 {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { ended in
                watch.ended()
                continuation.resume(returning: ended.terminationStatus)
            }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
                return
            }
            watch.started(process.processIdentifier)
        }
    }

    /// The child's process group while it runs: killed at most once, never after it ended
    /// (its id could then be another's).
    private final class Watch: Sendable {
        private struct State {
            var group: pid_t?
            var ended = false
            var killed = false
            var timedOut = false
        }

        private let state = Mutex(State())

        var timedOut: Bool { state.withLock { $0.timedOut } }

        func started(_ pid: pid_t) {
            let killNow = state.withLock { state in
                state.group = pid
                return state.killed && !state.ended
            }
            if killNow { Glibc.kill(-pid, SIGKILL) }
        }

        func ended() {
            state.withLock { $0.ended = true }
        }

        /// Kills the group if it still runs (or as soon as it has started).
        func kill(timedOut: Bool = false) {
            state.withLock { state in
                guard !state.ended, !state.killed else { return }
                state.killed = true
                state.timedOut = timedOut
                if let group = state.group { Glibc.kill(-group, SIGKILL) }
            }
        }
    }
}
