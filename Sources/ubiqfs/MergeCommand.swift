import ArgumentParser
import ItemModel

/// `ubiqfs merge MOUNTPOINT [--text on|off] [--sqlite on|off] [--json on|off]`: which kinds
/// of file merge when two devices changed them, for every device of the container.
struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Show or set which kinds of file merge when two devices changed them (the others keep a conflict copy).",
        discussion: "The setting is committed to the container's journal: every device follows it. Text merges by default (line by line, as git does); SQLite databases and JSON files only when turned on."
    )
    @Argument(help: "A ubiqfs mountpoint.") var mountpoint: String
    @Option(help: "Text files, line by line: on or off.") var text: Switch?
    @Option(help: "SQLite databases, by table and key: on or off.") var sqlite: Switch?
    @Option(help: "JSON files (*.json), line by line and only into valid JSON: on or off.") var json: Switch?

    enum Switch: String, ExpressibleByArgument {
        case on, off
    }

    func run() throws {
        let (mountpoint, _) = try ControlClient.locate(mountpoint)
        let changes = [("text", text), ("sqlite", sqlite), ("json", json)].compactMap { name, value in value.map { (name, $0 == .on) } }
        var request = ControlRequest(command: "merge")
        request.merge = changes.isEmpty ? nil : Dictionary(uniqueKeysWithValues: changes)
        guard let kinds = try ControlClient.send(request, mountpoint: mountpoint).merge else { return }
        for name in MergeKinds.names {
            print("\(name): \(kinds[name] == true ? "on" : "off")")
        }
    }
}
