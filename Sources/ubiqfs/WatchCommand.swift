import ArgumentParser
import Foundation
import Glibc

/// `ubiqfs watch PATH`: the watch API on the command line, one JSON line per change
/// under PATH until the mount ends or the reader goes away (docs/WATCH.md).
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a JSON line for every change under a folder or file of a mount, as it happens.",
        discussion: """
            Events: created, modified, moved, deleted, conflict, downloaded, evicted, uploaded; each \
            with the path inside the mount, "origin" (local or remote) and the time. Runs until \
            interrupted or the mount ends. Other programs can read the same stream from the \
            daemon's socket: see docs/WATCH.md.
            """
    )
    @Argument(help: "A ubiqfs mountpoint, or a folder or file inside one.") var path: String

    func run() throws {
        let (mountpoint, inside) = try ControlClient.locate(path)
        // Unbuffered, one write per line: a pipe reader sees each event at once.
        try ControlClient.stream(ControlRequest(command: "watch", path: inside), mountpoint: mountpoint) { line in
            let bytes = Array((line + "\n").utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress! + done, $0.count - done) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
    }
}
