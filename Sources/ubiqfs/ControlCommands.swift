import ArgumentParser
import Foundation
import Glibc
import SyncEngine

/// The mountpoint argument shared by the commands that talk to a running daemon.
struct MountpointArgument: ParsableArguments {
    @Argument(help: "A ubiqfs mountpoint (or any file or folder inside one), or the name of a mount in ~/.config/ubiqfs/mounts.conf.")
    var mountpoint: String

    init() {}

    init(mountpoint: String) {
        self.mountpoint = mountpoint
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a mount's sync state, pending uploads, errors and cache use, or one item's state.",
        discussion: "Given a mountpoint, shows the mount; given a file or folder inside a mount, shows that item."
    )
    @Argument(help: "A ubiqfs mountpoint, or an item inside one.") var path: String
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "Show the mount's uploads and downloads live, with a progress bar per file, until Ctrl-C.") var watch = false
    /// Seconds between frames of --watch, and how many to show (tests).
    @Option(help: .hidden) var interval: Double = 1
    @Option(help: .hidden) var frames: Int?

    var target: MountpointArgument { MountpointArgument(mountpoint: path) }

    func run() throws {
        let absolute = Paths.absolute(path)
        if ItemXattrs.get(absolute, "user.ubiqfs.control") == nil, let state = ItemXattrs.get(absolute, "user.ubiqfs.state") {
            try showItem(absolute, state: state)
            return
        }
        if watch { return try StatusWatch.run(mountpoint: target.mountpoint, interval: max(0.1, interval), frames: frames) }
        let response = try ControlClient.send(ControlRequest(command: "status"), mountpoint: target.mountpoint)
        if json {
            try StatusCommand.printJSON(response)
            return
        }
        guard let status = response.status else { return }
        print("\(response.mountpoint ?? target.mountpoint): \(status.state)")
        print("  store:           \(status.store)")
        print("  device:          \(status.device)")
        print("  journal:         \(status.lastSeq)")
        print("  pending uploads: \(status.pendingItems)")
        if let ignored = status.ignoredItems { print("  ignored:         \(ignored) (stay on this device)") }
        if let installed = status.thumbnailsInstalled, let toSend = status.thumbnailsToSend, installed + toSend > 0 {
            print("  thumbnails:      \(installed) from other devices in the thumbnail cache, \(toSend) made here to send")
        }
        print("  downloading:     \(status.downloading)")
        if let files = status.pendingFiles, let bytes = status.pendingBytes, files > 0 {
            print("  to upload:       \(files) files, \(Self.size(bytes))")
        }
        if let uploads = status.uploads { print("  uploads:         " + Self.describe(uploads)) }
        if let downloads = status.downloads { print("  downloads:       " + Self.describe(downloads)) }
        print("  cache:           \(Self.size(response.cacheBytes ?? 0)) of \(Self.size(response.cacheBudget ?? 0)) in \(response.stateDir ?? "?")/cache")
        if let last = status.lastSync {
            print("  last sync:       \(Int(Date().timeIntervalSince1970 - last))s ago")
        }
        if let use = status.collection {
            let when = Self.dateFormatter.string(from: Date(timeIntervalSince1970: Double(use.time) / 1e9))
            print("  store use:       \(Self.size(use.live)) live, \(Self.size(use.history)) versions, \(Self.size(use.trash)) trash, "
                + "\(Self.size(use.garbage - use.deletedBytes)) garbage (collected \(when))")
        }
        if let faults = response.storeFaults, !faults.isEmpty { print("  store faults:    \(faults) (ubiqfs faults \(target.mountpoint) off)") }
        if let error = status.lastError { print("  last error:      \(error)") }
        for held in status.held ?? [] { print("  held:            \(held)") }
        if status.readOnly == true { print("  read-only:       other devices' changes arrive; nothing here is written or pushed") }
        if let waiting = status.heldBack, waiting > 0 { print("  held back:       \(waiting) local changes, pushed once the held changes land") }
        for conflict in status.conflicts.suffix(10) { print("  conflict:        \(conflict)") }
        for merge in (status.merges ?? []).suffix(10) { print("  merged:          \(merge)") }
        for error in status.errors.suffix(5) where error != status.lastError { print("  error:           \(error)") }
    }

    /// One direction's transfers: what is queued, in flight and done, and the rate.
    static func describe(_ gate: TransferGate.Snapshot) -> String {
        var text = "\(gate.running) in flight (\(size(gate.runningBytes))), \(gate.queued) queued, "
            + "\(gate.done) done (\(size(gate.doneBytes))), \(size(gate.rate))/s"
        if let pace = gate.pace { text += "; limited to \(size(pace))/s" }
        if gate.throttled > 0 { text += "; throttled \(gate.throttled) times, \(gate.limit) at once now" }
        return text
    }

    private func showItem(_ path: String, state: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CommandFailure("\(path): \(String(cString: strerror(errno)))") }
        var fields: [(String, String)] = [
            ("state", state),
            ("progress", (ItemXattrs.get(path, "user.ubiqfs.progress") ?? "-") + "%"),
            ("pinned", ItemXattrs.get(path, "user.ubiqfs.pinned") == "1" ? "yes" : "no"),
            ("size", Self.size(Int64(info.st_size))),
            ("on this disk", Self.size(Int64(info.st_blocks) * 512)),
            ("id", ItemXattrs.get(path, "user.ubiqfs.id") ?? "-"),
            ("version", ItemXattrs.get(path, "user.ubiqfs.version") ?? "-"),
        ]
        if let error = ItemXattrs.get(path, "user.ubiqfs.error") { fields.append(("error", error)) }
        if json {
            let object = Dictionary(fields, uniquingKeysWith: { first, _ in first })
            try StatusCommand.printJSON(object)
            return
        }
        print(path)
        for (name, value) in fields { print("  \(name + ":")\(String(repeating: " ", count: max(1, 14 - name.count)))\(value)") }
    }

    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Local time, to the second, as the listings print it.
    static var dateFormatter: DateFormatter {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter
    }

    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync", abstract: "Push and pull now.")
    @OptionGroup var target: MountpointArgument
    @Flag(help: "Return only when nothing is pending (or fail saying why).") var wait = false

    func run() throws {
        _ = try ControlClient.send(ControlRequest(command: "sync", wait: wait), mountpoint: target.mountpoint)
    }
}

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Stop syncing; local work goes on and changes queue.")
    @OptionGroup var target: MountpointArgument

    func run() throws {
        _ = try ControlClient.send(ControlRequest(command: "pause"), mountpoint: target.mountpoint)
    }
}

struct FaultsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: "Show or change the faults injected into a running mount's store calls.",
        discussion: "SPEC is what --store-faults takes (latency=D, bandwidth=B, errors=P, lost=P, throttle=P, seed=N, hang, blocks; comma-separated), or off. A change applies to calls already waiting: `off` ends a hang."
    )
    @OptionGroup var target: MountpointArgument
    @Argument(help: "The new faults, or off; none to only show them.") var spec: String?

    func run() throws {
        let response = try ControlClient.send(ControlRequest(command: "faults", faults: spec), mountpoint: target.mountpoint)
        let faults = response.storeFaults ?? ""
        print("store faults: \(faults.isEmpty ? "none" : faults)")
    }
}

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume syncing.")
    @OptionGroup var target: MountpointArgument

    func run() throws {
        _ = try ControlClient.send(ControlRequest(command: "resume"), mountpoint: target.mountpoint)
    }
}

struct LocksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "locks", abstract: "Show who holds and who waits for which item (the coordinator's table).")
    @OptionGroup var target: MountpointArgument

    func run() throws {
        let response = try ControlClient.send(ControlRequest(command: "locks"), mountpoint: target.mountpoint)
        let locks = response.locks ?? []
        if locks.isEmpty {
            print("no leases held")
            return
        }
        let now = Date().timeIntervalSince1970
        for entry in locks {
            print("\(entry.path) (inode \(entry.inode))")
            for holder in entry.holders {
                print("  holds \(holder.access) for \(String(format: "%.1f", now - holder.since))s: \(holder.owner)")
            }
            for waiter in entry.waiters {
                print("  waits \(waiter.access) for \(String(format: "%.1f", now - waiter.since))s: \(waiter.owner)")
            }
        }
    }
}

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unmount", abstract: "Unmount, push what is pending, and stop the daemon.")
    @OptionGroup var target: MountpointArgument

    func run() throws {
        let response = try ControlClient.send(ControlRequest(command: "unmount"), mountpoint: target.mountpoint)
        guard let pid = response.pid else { return }
        let result = response.stateDir.map { $0 + "/" + Daemon.unmountResult }
        if let result { unlink(result) }
        // The daemon exits after its last push (bounded; cut short when the store does not
        // answer), releasing its state dir: a mount right after this one may use it.
        let deadline = Date().addingTimeInterval(120)
        while kill(pid, 0) == 0 || errno != ESRCH {
            if Date() > deadline { throw CommandFailure("the daemon (pid \(pid)) did not stop within 120 s") }
            usleep(50_000)
        }
        guard let result, let text = try? String(contentsOfFile: result, encoding: .utf8) else { return }
        unlink(result)
        if let pending = Int(text), pending > 0 {
            print("\(response.mountpoint ?? target.mountpoint): \(pending) changes could not be pushed before the unmount; they are kept and pushed after the next mount")
        }
    }
}
