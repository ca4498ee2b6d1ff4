import ArgumentParser
import Foundation
import Logging

/// `ubiqfs mount`: returns once the mount is usable, leaving the daemon running (or
/// serves in the foreground with --foreground).
struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a container on a folder.",
        discussion: "Without --foreground, returns 0 once the mount is usable and leaves the daemon running; on an error it prints one line and exits non-zero."
    )

    @OptionGroup var options: MountOptions

    func validate() throws {
        guard Logger.Level(rawValue: options.logLevel) != nil else {
            throw ValidationError("unknown log level '\(options.logLevel)'")
        }
        guard !options.container.isEmpty, !options.container.contains("/"), !options.container.hasPrefix(".") else {
            throw ValidationError("invalid container name '\(options.container)'")
        }
        if let size = options.cacheSize, ByteSize.parse(size) == nil {
            throw ValidationError("invalid --cache-size '\(size)': a number with an optional unit K, M, G or T")
        }
        let device = options.resolvedDevice
        guard !device.isEmpty, device.utf8.count <= 64, !device.contains("/"), !device.contains("\0") else {
            throw ValidationError("invalid device name '\(device)': 1 to 64 bytes, no '/'")
        }
    }

    func run() throws {
        _ = try DeadMount.recover(options.resolvedMountpoint)
        if options.foreground {
            let code = Daemon(options: options).run()
            if code != 0 { throw ExitCode(code) }
        } else {
            try DaemonLauncher.launch(options: options)
        }
    }
}
