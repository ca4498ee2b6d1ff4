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
            let name = version.input.map { "\(version.version).\($0)" } ?? String(version.version)
            let number = name.padding(toLength: max(8, name.count), withPad: " ", startingAt: 0)
            let size = StatusCommand.size(version.size).padding(toLength: 10, withPad: " ", startingAt: 0)
            var notes: [String] = []
            if version.current { notes.append("current") }
            if let with = version.mergedWith { notes.append("merged: \(version.mergeKind ?? "text") of \(with) and the edits below") }
            if version.input != nil { notes.append("an edit merged into \(version.version)") }
            print("\(number) \(date)  \(size) \(version.device)" + (notes.isEmpty ? "" : "  (" + notes.joined(separator: "; ") + ")"))
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
    @Option(help: "The version that `ubiqfs versions` shows: N, or N.K for an edit a merge took in.") var version: String

    func run() throws {
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let seq = UInt64(parts[0]), let input = parts.count == 2 ? Int(parts[1]) : 0, input >= 0 else {
            throw CommandFailure("--version takes N or N.K, as `ubiqfs versions` shows them, not \(version)")
        }
        let (mountpoint, inside) = try ControlClient.locate(path)
        var request = ControlRequest(command: "restore", path: inside, version: seq, pathBytes: ControlClient.insideBytes(path, mountpoint: mountpoint))
        request.input = input
        _ = try ControlClient.send(request, mountpoint: mountpoint)
        print("\(path): version \(version) restored; it is uploaded as the newest version")
    }
}
