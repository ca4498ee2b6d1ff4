import ArgumentParser

/// The `ubiqfs` command: mount a cloud container, and talk to a running mount.
@main
struct UbiqFS: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "ubiqfs",
        abstract: "Mount a cloud container as an ordinary folder, shared by several machines.",
        discussion: "Also started by mount(8) as `ubiqfs STORE MOUNTPOINT -o OPTIONS` for `mount -t fuse.ubiqfs` and /etc/fstab.",
        version: version,
        subcommands: [
            MountCommand.self, UnmountCommand.self, StatusCommand.self, SyncCommand.self,
            PauseCommand.self, ResumeCommand.self, LocksCommand.self, FaultsCommand.self,
            PinCommand.self, UnpinCommand.self, EvictCommand.self, DownloadCommand.self, IgnoreCommand.self, UnignoreCommand.self,
            WatchCommand.self, VersionsCommand.self, RestoreCommand.self, DoctorCommand.self, ResetCommand.self,
            RemountCommand.self, TrashCommand.self, RetentionCommand.self, MergeCommand.self, GCCommand.self, PassphraseCommand.self,
        ]
    )

    /// Takes the mount.fuse calling convention (`ubiqfs STORE MOUNTPOINT -o OPTIONS`) as
    /// well as the subcommands.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let names = Set(configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"])
        do {
            main(try FuseMountConvention.translate(arguments, subcommands: names) ?? arguments)
        } catch {
            exit(withError: error)
        }
    }
}
