import FuseKit
internal import Glibc
internal import Foundation

// powercutfs BACKING MOUNTPOINT: a FUSE filesystem that keeps every write in memory until it
// is fsynced, as a disk's page cache does, and persists what an fsync made durable in
// BACKING. `kill -9` of this process is a power cut: what was not fsynced is gone. See
// `Backing` for the layout and `Tree` for the model (ext4 data=ordered without writeback).

let usage = """
    usage: powercutfs [--verbose] [--commit-interval SECONDS] BACKING MOUNTPOINT

    Mounts MOUNTPOINT and serves it in the foreground until it is unmounted (exit 0) or the
    process is killed. BACKING (made if missing) holds the durable state; at start the tree is
    exactly what it holds. kill -9 is a power cut; a clean unmount or SIGTERM writes
    everything back first.

    The model: any fsync, fdatasync or fsyncdir commits every earlier change of names and
    metadata at once; a regular file's content and size become durable only by its own
    fsync or fdatasync (a file never synced comes back empty). With --commit-interval, the
    names and metadata are also committed every SECONDS by themselves, as ext4's journal
    commits every 5 s: what a program never fsynced may then survive a cut in part (a delete,
    a rename), in any order against the program's own files.
    """

/// One line on stderr.
func note(_ line: String) {
    let bytes = Array("powercutfs: \(line)\n".utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    note(message)
    exit(1)
}

var verbose = false
var commitInterval: Double?
var positional: [String] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--commit-interval":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else { fail("--commit-interval needs a number of seconds") }
        commitInterval = value
    case "-h", "--help":
        print(usage)
        exit(0)
    case "-v", "--verbose":
        verbose = true
    default:
        if argument.hasPrefix("-") { fail("unknown option \(argument)\n\(usage)") }
        positional.append(argument)
    }
}
guard positional.count == 2 else { fail("expected BACKING and MOUNTPOINT\n\(usage)") }

/// Absolute, so statfs and the backing do not depend on the working folder.
func absolute(_ path: String) -> String {
    if path.hasPrefix("/") { return path }
    guard let cwd = getcwd(nil, 0) else { return path }
    defer { free(cwd) }
    return String(cString: cwd) + "/" + path
}

let backingPath = absolute(positional[0])
let mountpoint = absolute(positional[1])
var info = stat()
guard stat(mountpoint, &info) == 0 else {
    let reason = errno == ENOTCONN ? "a dead mount (run fusermount3 -uz \(mountpoint))" : String(cString: strerror(errno))
    fail("the mountpoint \(mountpoint): \(reason)")
}
guard info.st_mode & S_IFMT == S_IFDIR else { fail("the mountpoint \(mountpoint) is not a folder") }

let filesystem: PowerCutFileSystem
do throws(BackingError) {
    let backing = try Backing(path: backingPath)
    let (image, contents) = try backing.load()
    filesystem = PowerCutFileSystem(
        tree: Tree(image: image, contents: contents), backing: backing, backingPath: backingPath, verbose: verbose
    )
    if verbose {
        note("loaded \(image?.nodes.count ?? 1) inodes from \(backingPath)")
    }
} catch {
    fail(error.description)
}

do throws(FuseError) {
    let session = try FuseSession(
        operations: filesystem, arguments: ["powercutfs", "-o", "default_permissions,fsname=powercutfs,subtype=powercutfs"]
    )
    try session.mount(at: mountpoint)
    if let commitInterval {
        Thread {
            while true {
                usleep(UInt32(commitInterval * 1_000_000))
                filesystem.commitMetadata()
            }
        }.start()
    }
    try session.run(maxThreads: 8)
    session.unmount()
} catch {
    fail("\(error)")
}
do throws(BackingError) {
    try filesystem.commitEverything()
} catch {
    fail("the last write-back failed: \(error)")
}
exit(0)
