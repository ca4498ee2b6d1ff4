import Dispatch
import Foundation
import Logging
import Synchronization
import SyncEngine

/// Desktop notifications (freedesktop, sent with `notify-send`) for what a person should
/// hear of without watching: a conflict copy made, two devices' edits merged, the store unreachable for a while, the
/// cache budget evicting files opened lately. A burst becomes one notification. Off with
/// `--no-notify`, and off by itself where there is no desktop session bus.
final class DesktopNotifier: Sendable {
    struct Settings {
        /// How long the store must stay unreachable before it is worth a notification.
        var unreachableAfter: Duration = .seconds(300)
        /// Events this close together are told in one notification.
        var gather: Duration = .seconds(2)
        var command = "notify-send"

        /// `UBIQFS_NOTIFY_UNREACHABLE_AFTER` (seconds) shortens the wait, for tests.
        init(environment: [String: String] = [:]) {
            if let seconds = environment["UBIQFS_NOTIFY_UNREACHABLE_AFTER"].flatMap(Double.init), seconds >= 0 {
                unreachableAfter = .milliseconds(Int64(seconds * 1000))
            }
        }
    }

    private struct State {
        var conflicts: [String] = []
        var merged: [String] = []
        var evicted: [String] = []
        var flushScheduled = false
        var offlineSince: ContinuousClock.Instant?
        var toldOffline = false
        var stopped = false
    }

    private let settings: Settings
    private let logger: Logger
    private let executable: String
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "ubiqfs.notify")

    /// Nil, with the reason logged, where notifications cannot be shown.
    init?(settings: Settings, environment: [String: String], logger: Logger) {
        guard Self.hasSessionBus(environment) else {
            logger.info("desktop notifications off: no session bus")
            return nil
        }
        let paths = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(settings.command)" }
        guard let executable = settings.command.hasPrefix("/") ? settings.command : paths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            logger.info("desktop notifications off: \(settings.command) is not installed (Debian: libnotify-bin)")
            return nil
        }
        self.settings = settings
        self.logger = logger
        self.executable = executable
    }

    /// A bus address given, or the one systemd's user session makes. A `unix:path=` address
    /// must name a socket that is there (a login over ssh may carry a stale one).
    private static func hasSessionBus(_ environment: [String: String]) -> Bool {
        let address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? environment["XDG_RUNTIME_DIR"].map { "unix:path=\($0)/bus" }
        guard let address else { return false }
        guard address.hasPrefix("unix:path=") else { return true }
        let path = address.dropFirst("unix:path=".count).prefix { $0 != "," }
        return FileManager.default.fileExists(atPath: String(path))
    }

    /// Hears of conflicts and merges, and watches whether the store answers.
    func start(conflicts: ConflictListener, storeIsOnline: @escaping @Sendable () -> Bool) {
        conflicts.set { [weak self] kind, message in
            switch kind {
            case .conflict: self?.gathered { $0.conflicts.append(message) }
            case .merged: self?.gathered { $0.merged.append(message) }
            }
        }
        let thread = Thread { [weak self] in
            while let self, !self.state.withLock({ $0.stopped }) {
                self.check(online: storeIsOnline())
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.name = "ubiqfs-notify"
        thread.start()
    }

    func stop(conflicts: ConflictListener) {
        conflicts.set(nil)
        state.withLock { $0.stopped = true }
    }

    /// Files the cache budget evicted that were opened within the hour.
    func evictedRecentlyUsed(_ paths: [String]) {
        gathered { $0.evicted += paths }
    }

    private func gathered(_ change: (inout State) -> Void) {
        let schedule = state.withLock { state -> Bool in
            change(&state)
            defer { state.flushScheduled = true }
            return !state.flushScheduled
        }
        guard schedule else { return }
        let (seconds, attoseconds) = settings.gather.components
        queue.asyncAfter(deadline: .now() + Double(seconds) + Double(attoseconds) / 1e18) { [self] in flush() }
    }

    private func flush() {
        let (conflicts, merged, evicted) = state.withLock { state in
            defer { (state.conflicts, state.merged, state.evicted, state.flushScheduled) = ([], [], [], false) }
            return (state.conflicts, state.merged, state.evicted)
        }
        if !conflicts.isEmpty {
            let title = conflicts.count == 1 ? "A conflict: both versions are kept" : "\(conflicts.count) conflicts: both versions are kept"
            send(title, Self.list(conflicts), icon: "emblem-ubiqfs-conflict")
        }
        if !merged.isEmpty {
            let title = merged.count == 1 ? "A file was merged: both edits are in it" : "\(merged.count) files were merged: both edits are in each"
            send(title, Self.list(merged), icon: "emblem-ubiqfs-local")
        }
        if !evicted.isEmpty {
            let title = evicted.count == 1 ? "A file you used lately was removed from this device" : "\(evicted.count) files you used lately were removed from this device"
            send(title, Self.list(evicted) + "\nThe cache budget is full; they download again when opened. A larger --cache-size keeps them.", icon: "emblem-ubiqfs-cloud")
        }
    }

    private func check(online: Bool) {
        let now = ContinuousClock.now
        let message = state.withLock { state -> (String, String)? in
            if online {
                state.offlineSince = nil
                guard state.toldOffline else { return nil }
                state.toldOffline = false
                return ("The store is reachable again", "Sync goes on: changes made meanwhile are being uploaded.")
            }
            let since = state.offlineSince ?? now
            state.offlineSince = since
            guard !state.toldOffline, now - since >= settings.unreachableAfter else { return nil }
            state.toldOffline = true
            return ("The store cannot be reached", "Your changes are kept on this device and uploaded when it is back. Files that are not on this device cannot be opened meanwhile.")
        }
        if let (title, body) = message { queue.async { [self] in send(title, body, icon: "emblem-ubiqfs-error") } }
    }

    private static func list(_ lines: [String]) -> String {
        lines.prefix(3).joined(separator: "\n") + (lines.count > 3 ? "\nand \(lines.count - 3) more" : "")
    }

    /// Runs notify-send on the notifier's own queue, never on the cooperative pool.
    private func send(_ title: String, _ body: String, icon: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--app-name=ubiqfs", "--icon=\(icon)", title, body]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                logger.warning("\(settings.command) failed (status \(process.terminationStatus)): \(title)")
            }
        } catch {
            logger.warning("cannot run \(executable): \(error)")
        }
    }
}
