import ArgumentParser
import Foundation
import SyncEngine

/// `ubiqfs gc MOUNTPOINT [--grace DURATION]`: collects the container now.
struct GCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Delete from the store what no file, version or trash entry within retention needs (format-2 containers).",
        discussion: """
            It marks, waits the grace period (1h by default), then deletes: a device writing meanwhile never loses an object \
            it names. Then it compacts the journal: records up to a checkpoint it first saw a week ago (the horizon) are \
            replaced by tombstones, their versions and trash kept in a history object. It also runs by itself about once a day. --grace \
            shortens the wait and the horizon: for tests, or when no other device is writing or offline.
            """
    )
    @Argument(help: "A ubiqfs mountpoint.") var mountpoint: String
    @Option(help: "How long condemned objects wait before they are deleted: 90s, 10m, 1h.") var grace: String?

    func run() throws {
        let seconds = try grace.map { text throws -> Double in
            guard let value = Self.seconds(text) else { throw CommandFailure("--grace \(text): expected a duration such as 90s, 10m or 1h, at most 7d") }
            return value
        }
        let (mountpoint, _) = try ControlClient.locate(mountpoint)
        guard let report = try ControlClient.send(ControlRequest(command: "gc", graceSeconds: seconds), mountpoint: mountpoint).collection else { return }
        let size = StatusCommand.size
        if let packs = report.repacked {
            print("repacked \(packs) packs that were mostly garbage: \(report.relocated ?? 0) blobs moved, \(size(report.repackedBytes ?? 0)) copied")
        }
        if let unreadable = report.unreadableBlobs {
            print("warning: \(unreadable) blobs in packs do not match their names and were left where they are: the store holds damaged content, and reading it fails with EIO")
        }
        print("deleted \(report.deleted) objects (\(size(report.deletedBytes))); \(report.rescued) kept because a device named them meanwhile")
        if let through = report.compactedThrough {
            print("compacted the journal through record \(through): \(report.recordsCompacted ?? 0) records compacted")
        }
        print("the store holds \(size(report.stored - report.deletedBytes)): \(size(report.live)) live, \(size(report.history)) versions, \(size(report.trash)) trash")
    }

    /// "1h", "10m", "90s", "500ms", "2d" or a number of seconds; at most a week.
    static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        let (number, scale) = units.first { text.hasSuffix($0.0) }.map { (String(text.dropLast($0.0.count)), $0.1) } ?? (text, 1)
        guard let value = Double(number), value.isFinite, value >= 0, value * scale <= 7 * 86400 else { return nil }
        return value * scale
    }
}
