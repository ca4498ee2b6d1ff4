import Foundation
import CSystemShims
import Glibc

/// Starts the daemon as a new session in the background and waits until it says the
/// mount is usable (a line on an inherited pipe), or prints the one-line reason it failed.
enum DaemonLauncher {
    /// POSIX_SPAWN_SETSID from <spawn.h>, not imported by Swift: the daemon leaves our terminal's session.
    private static let spawnSetSID: Int16 = 0x80

    /// `passphrase` reaches the daemon through a pipe of its own (descriptor 4), never
    /// its command line or environment, which other processes can read.
    static func launch(options: MountOptions, passphrase: String?) throws {
        let stateDir = options.resolvedStateDir
        try StateDirSafety.prepare(stateDir)
        let logPath = stateDir + "/ubiqfs.log"
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard logFD >= 0 else { throw CommandFailure("cannot open \(logPath): \(String(cString: strerror(errno)))") }
        defer { close(logFD) }
        var pipeFDs: [Int32] = [0, 0]
        guard CSystemShims_pipe_cloexec(&pipeFDs) == 0 else { throw CommandFailure("cannot create a pipe") }

        var secretFDs: [Int32] = [-1, -1]
        if passphrase != nil {
            guard CSystemShims_pipe_cloexec(&secretFDs) == 0 else { throw CommandFailure("cannot create a pipe") }
        }
        defer { secretFDs.filter { $0 >= 0 }.forEach { close($0) } }
        if let passphrase {
            // A passphrase is far below a pipe's buffer: the write never waits for the reader.
            let bytes = Array(passphrase.utf8)
            guard bytes.withUnsafeBytes({ write(secretFDs[1], $0.baseAddress, $0.count) }) == bytes.count else {
                throw CommandFailure("cannot hand the passphrase to the daemon")
            }
            close(secretFDs[1])
            secretFDs[1] = -1
        }

        var child = options
        child.foreground = true
        child.readyFd = 3
        child.passphraseFile = nil
        child.passphraseFd = passphrase == nil ? nil : 4
        let arguments = child.commandLine
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, logFD, 1)
        posix_spawn_file_actions_adddup2(&actions, logFD, 2)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 3)
        if passphrase != nil { posix_spawn_file_actions_adddup2(&actions, secretFDs[0], 4) }
        CSystemShims_spawn_closefrom(&actions, passphrase == nil ? 4 : 5)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, spawnSetSID)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(pipeFDs[1])
        defer { close(pipeFDs[0]) }
        guard spawned == 0 else { throw CommandFailure("cannot start the daemon: \(String(cString: strerror(spawned)))") }

        var message: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(pipeFDs[0], &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            message += buffer[0..<n]
        }
        let text = String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "ok" { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        if text.isEmpty {
            throw CommandFailure("the daemon stopped before the mount was ready; see \(logPath)")
        }
        throw CommandFailure(text)
    }
}
