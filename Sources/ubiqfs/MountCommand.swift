import ArgumentParser
import Foundation
import Logging
import MetricsHTTP

/// `ubiqfs mount`: returns once the mount is usable, leaving the daemon running (or
/// serves in the foreground with --foreground).
struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a container on a folder.",
        discussion: """
            MOUNTPOINT may name a mount of ~/.config/ubiqfs/mounts.conf (docs/INSTALL.md); options given here override the profile's. \
            Without --foreground, returns 0 once the mount is usable and leaves the daemon running; on an error it prints one line and exits non-zero. \
            `mount -t fuse.ubiqfs STORE MOUNTPOINT -o OPTIONS` and /etc/fstab lines work too (man ubiqfs: MOUNT.FUSE AND FSTAB).
            """
    )

    @OptionGroup var options: MountOptions

    func run() throws {
        let (options, profile) = try self.options.resolvingProfile()
        if profile != nil, access(options.resolvedMountpoint, F_OK) != 0, errno == ENOENT {
            // A profile's mountpoint is made on first use, as a login-time mount expects.
            do {
                try FileManager.default.createDirectory(atPath: options.resolvedMountpoint, withIntermediateDirectories: true)
            } catch {
                throw CommandFailure("cannot create the mountpoint \(options.resolvedMountpoint): \(error.localizedDescription)")
            }
        }
        try Self.check(options)
        _ = try DeadMount.recover(options.resolvedMountpoint)
        // Asked here, on the user's terminal, before the daemon leaves it.
        let passphrase = try options.passphraseFd == nil ? Passphrase.resolve(options) : nil
        if options.foreground {
            let code = Daemon(options: options, passphrase: passphrase).run()
            if code != 0 { throw ExitCode(code) }
        } else {
            try DaemonLauncher.launch(options: options, passphrase: passphrase)
        }
    }

    static func check(_ options: MountOptions) throws {
        guard Logger.Level(rawValue: options.resolvedLogLevel) != nil else {
            throw ValidationError("unknown log level '\(options.resolvedLogLevel)'")
        }
        let container = options.resolvedContainer
        guard !container.isEmpty, !container.contains("/"), !container.hasPrefix(".") else {
            throw ValidationError("invalid container name '\(container)'")
        }
        if let size = options.cacheSize, ByteSize.parse(size) == nil {
            throw ValidationError("invalid --cache-size '\(size)': a number with an optional unit K, M, G or T")
        }
        if let transfers = options.transfers, !(1...256).contains(transfers) {
            throw ValidationError("invalid --transfers \(transfers): 1 to 256")
        }
        if let metrics = options.metrics {
            do { _ = try MetricsAddress(parsing: metrics) } catch {
                throw ValidationError("invalid --metrics \(error)")
            }
        }
        if let limit = options.bwlimit, BandwidthLimit(parsing: limit) == nil {
            throw ValidationError("invalid --bwlimit '\(limit)': RATE or UP:DOWN, each a size per second (512K, 10M) or off")
        }
        let device = options.resolvedDevice
        guard !device.isEmpty, device.utf8.count <= 64, !device.contains("/"), !device.contains("\0") else {
            throw ValidationError("invalid device name '\(device)': 1 to 64 bytes, no '/'")
        }
    }
}
