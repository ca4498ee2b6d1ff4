import ArgumentParser
import Glibc

/// `mount -o remount,ro MOUNTPOINT` (and `rw`), which mount(8) hands to us through
/// mount.fuse3: the kernel's flag changes (keeping nosuid, nodev and noexec), and the
/// daemon stops or resumes pushing.
struct RemountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remount",
        abstract: "Make a mount read-only or read-write again (what `mount -o remount,ro|rw` runs).",
        discussion: "Needs root, as any remount does."
    )
    @OptionGroup var target: MountpointArgument
    @Flag(exclusivity: .exclusive) var mode: Mode

    enum Mode: String, EnumerableFlag {
        case readOnly, readWrite
    }

    func run() throws {
        let (mountpoint, _) = try ControlClient.locate(target.mountpoint)
        var info = statvfs()
        guard statvfs(mountpoint, &info) == 0 else { throw CommandFailure("cannot read the flags of \(mountpoint): \(String(cString: strerror(errno)))") }
        var flags = UInt(MS_REMOUNT) | UInt(MS_NOSUID) | UInt(MS_NODEV)
        // ST_NOEXEC (8, a GNU name that Swift's Glibc module leaves out).
        if info.f_flag & 8 != 0 { flags |= UInt(MS_NOEXEC) }
        if mode == .readOnly { flags |= UInt(MS_RDONLY) }
        // Read-only: pushes stop first; read-write: the kernel allows writes first.
        if mode == .readOnly { try tell(readOnly: true) }
        guard Glibc.mount(nil, mountpoint, nil, flags, nil) == 0 else {
            let reason = String(cString: strerror(errno))
            // The kernel kept the mount writable: so does the daemon.
            if mode == .readOnly { try tell(readOnly: false) }
            throw CommandFailure("cannot remount \(mountpoint): \(reason)")
        }
        if mode == .readWrite { try tell(readOnly: false) }
    }

    private func tell(readOnly: Bool) throws {
        _ = try ControlClient.send(ControlRequest(command: "remount", readOnly: readOnly), mountpoint: target.mountpoint)
    }
}
