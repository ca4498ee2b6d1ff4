import Foundation
import Glibc

/// Runs a program with `posix_spawn`, capturing its output: what the mount tests run
/// (`ubiqfs`, `bash` scripts). Not Foundation's `Process`, which on Linux adds a close
/// action for every descriptor up to the highest one open: with the hundred devices of
/// the engine tests open at once in the same test process (over a thousand descriptors)
/// it crashed in `Process.run`. Here a small Python trampoline closes everything above
/// stderr at once (`close_range`), changes directory and execs the program, started with
/// an empty signal mask and default handlers (as from a terminal: the test runner's
/// threads block signals, and Ctrl-C must reach the child).
enum ChildProcess {
    struct Output {
        var status: Int32
        var output: Data
        var error: Data
        var timedOut: Bool
    }

    static func run(_ arguments: [String], directory: String?, environment: [String: String]?, timeout: TimeInterval) throws -> Output {
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        guard pipe(&out) == 0, pipe(&err) == 0 else { throw FixtureError("pipe: \(String(cString: strerror(errno)))") }
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { for fd in [out[0], err[0]] { close(fd) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        var all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let argv = ["/usr/bin/python3", "-c", Self.trampoline, directory ?? ""] + arguments
        let spawned = withCStrings(argv) { argv in
            withCStrings(env) { envp in posix_spawn(&pid, "/usr/bin/python3", &actions, &attributes, argv, envp) }
        }
        close(out[1])
        close(err[1])
        guard spawned == 0 else { throw FixtureError("cannot run \(arguments[0]): \(String(cString: strerror(spawned)))") }
        let (output, error, timedOut) = drain(out[0], err[0], pid: pid, until: Date().addingTimeInterval(timeout))
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Output(status: timedOut ? -1 : code, output: output, error: error, timedOut: timedOut)
    }

    private static let trampoline = """
        import os, sys
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        if sys.argv[1]: os.chdir(sys.argv[1])
        os.execvp(sys.argv[2], sys.argv[2:])
        """

    /// Reads both pipes to their end; past the deadline the child gets SIGTERM, then
    /// SIGKILL a second later (a program that ignores the first).
    private static func drain(_ out: Int32, _ err: Int32, pid: pid_t, until deadline: Date) -> (Data, Data, Bool) {
        var data = [out: Data(), err: Data()]
        var open: Set<Int32> = [out, err]
        var buffer = [UInt8](repeating: 0, count: 65536)
        var timedOut = false
        var killAt: Date?
        while !open.isEmpty {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), 100)
            if ready < 0 && errno != EINTR { break }
            for entry in fds where entry.revents != 0 {
                let n = read(entry.fd, &buffer, buffer.count)
                if n > 0 { data[entry.fd]?.append(contentsOf: buffer[0..<n]) } else if n == 0 || errno != EINTR { open.remove(entry.fd) }
            }
            let now = Date()
            if !timedOut && now > deadline {
                timedOut = true
                kill(pid, SIGTERM)
                killAt = now.addingTimeInterval(1)
            } else if let at = killAt, now > at {
                kill(pid, SIGKILL)
                killAt = nil
                // A daemon it started may hold the pipes: stop reading.
                break
            }
        }
        return (data[out] ?? Data(), data[err] ?? Data(), timedOut)
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
