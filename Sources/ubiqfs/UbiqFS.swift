import ArgumentParser

/// The `ubiqfs` command: mount a cloud container, and talk to a running mount.
@main
struct UbiqFS: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "ubiqfs",
        abstract: "Mount a cloud container as an ordinary folder, shared by several machines.",
        version: version,
        subcommands: [
            MountCommand.self, UnmountCommand.self, StatusCommand.self, SyncCommand.self,
            PauseCommand.self, ResumeCommand.self, LocksCommand.self, FaultsCommand.self,
            PinCommand.self, UnpinCommand.self, EvictCommand.self, DownloadCommand.self,
            WatchCommand.self, VersionsCommand.self, RestoreCommand.self,
        ]
    )
}
