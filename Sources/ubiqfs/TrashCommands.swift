import ArgumentParser
import Foundation

/// `ubiqfs trash MOUNTPOINT` and `ubiqfs trash restore PATH`: the container's shared trash.
struct TrashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trash",
        abstract: "List deleted items (on any device) or bring one back.",
        discussion: "Deleted items stay restorable for the container's trash retention (`ubiqfs retention`, 30 days by default).",
        subcommands: [TrashListCommand.self, TrashRestoreCommand.self],
        defaultSubcommand: TrashListCommand.self
    )
}

struct TrashListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List deleted items, newest first: when, by which device, path, size."
    )
    @Argument(help: "A ubiqfs mountpoint.") var mountpoint: String
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let (mountpoint, _) = try ControlClient.locate(mountpoint)
        let entries = try ControlClient.send(ControlRequest(command: "trash"), mountpoint: mountpoint).trash ?? []
        if json {
            try StatusCommand.printJSON(entries)
            return
        }
        let formatter = StatusCommand.dateFormatter
        print("DELETED              DEVICE        SIZE        JOURNAL  PATH")
        for entry in entries {
            let date = formatter.string(from: Date(timeIntervalSince1970: entry.deleted))
            let device = entry.device.padding(toLength: 13, withPad: " ", startingAt: 0)
            let contents = entry.kind == "directory" ? " (folder, \(entry.items - 1) items inside)" : ""
            let size = StatusCommand.size(entry.size).padding(toLength: 11, withPad: " ", startingAt: 0)
            let seq = String(entry.seq).padding(toLength: 8, withPad: " ", startingAt: 0)
            print("\(date)  \(device) \(size) \(seq) \(entry.path)\(contents)")
        }
    }
}

struct TrashRestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Bring a deleted item back at its old path, with its last content (a folder with what it held).",
        discussion: "A name taken meanwhile gives the restored item a free one (`name (2)`); a missing folder above it is made again."
    )
    @Argument(help: "Where the item was, inside the mount (as `ubiqfs trash` lists it, under the mountpoint).") var path: String
    @Option(help: "The journal number `ubiqfs trash` shows, when one path was deleted more than once (default: the newest).") var journal: UInt64?

    func run() throws {
        let (mountpoint, inside) = try ControlClient.locate(path)
        let response = try ControlClient.send(ControlRequest(command: "trash-restore", path: inside, version: journal), mountpoint: mountpoint)
        let now = (mountpoint == "/" ? "" : mountpoint) + (response.path ?? inside)
        print("restored \(now); it is uploaded as a new change")
    }
}

/// `ubiqfs retention MOUNTPOINT [--versions DAYS] [--trash DAYS]`: the container's retention.
struct RetentionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Show or set how long versions and deleted items are kept, for every device of the container.",
        discussion: "The setting is committed to the container's journal: every device follows it. 30 days each by default; the newest version of a file always stays."
    )
    @Argument(help: "A ubiqfs mountpoint.") var mountpoint: String
    @Option(help: "Keep file versions this many days.") var versions: Double?
    @Option(help: "Keep deleted items restorable this many days.") var trash: Double?

    func run() throws {
        for days in [versions, trash].compactMap({ $0 }) where !(0...36525).contains(days) {
            throw CommandFailure("a retention is 0 to 36525 days, not \(RetentionCommand.days(days))")
        }
        let (mountpoint, _) = try ControlClient.locate(mountpoint)
        let request = ControlRequest(command: "retention", versionsDays: versions, trashDays: trash)
        guard let retention = try ControlClient.send(request, mountpoint: mountpoint).retention else { return }
        print("versions: \(Self.days(retention.versionsDays))")
        print("trash: \(Self.days(retention.trashDays))")
    }

    static func days(_ value: Double) -> String {
        let text = value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
        return value == 1 ? "1 day" : "\(text) days"
    }
}
