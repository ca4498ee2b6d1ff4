import ArgumentParser
import Foundation

/// `ubiqfs versions PATH`: the file's committed versions, newest first.
struct VersionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List earlier versions of a file: version number, time, device and size.",
        discussion: "Versions are kept for the container's retention (`ubiqfs retention`, 30 days by default); the newest always stays."
    )
    @Argument(help: "A file inside a ubiqfs mount.") var path: String
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let (mountpoint, inside) = try ControlClient.locate(path)
        let request = ControlRequest(command: "versions", path: inside, pathBytes: ControlClient.insideBytes(path, mountpoint: mountpoint))
        let response = try ControlClient.send(request, mountpoint: mountpoint)
        let versions = response.versions ?? []
        if json {
            try StatusCommand.printJSON(versions)
            return
        }
        let formatter = StatusCommand.dateFormatter
        print("VERSION  DATE                 SIZE       DEVICE")
        for version in versions {
            let date = formatter.string(from: Date(timeIntervalSince1970: version.time))
            let number = String(version.version).padding(toLength: 8, withPad: " ", startingAt: 0)
            let size = StatusCommand.size(version.size).padding(toLength: 10, withPad: " ", startingAt: 0)
            print("\(number) \(date)  \(size) \(version.device)\(version.current ? "  (current)" : "")")
        }
    }
}

/// `ubiqfs restore PATH --version N`: brings version N back as the newest version.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make an earlier version of a file its current content (a new version; nothing is lost)."
    )
    @Argument(help: "A file inside a ubiqfs mount.") var path: String
    @Option(help: "The version number that `ubiqfs versions` shows.") var version: UInt64

    func run() throws {
        let (mountpoint, inside) = try ControlClient.locate(path)
        let request = ControlRequest(command: "restore", path: inside, version: version, pathBytes: ControlClient.insideBytes(path, mountpoint: mountpoint))
        _ = try ControlClient.send(request, mountpoint: mountpoint)
        print("\(path): version \(version) restored; it is uploaded as the newest version")
    }
}
