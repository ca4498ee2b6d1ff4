import ArgumentParser
import CloudFileSystem
import Foundation
import Glibc

/// `ubiqfs reset`: clears this device's local state once everything is in the store.
struct ResetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Forget this device's local state (database and cache); the next mount starts over from the store.",
        discussion: """
            Takes the same arguments as `ubiqfs mount` (or a mount's name) to find the state dir. Refused while the mount is running \
            or while anything here is not in the store yet: mount, run `ubiqfs sync --wait`, unmount, and reset again. \
            Removes the database, the content cache and the daemon's leftovers only; pins and local settings are forgotten; the log, the lock and quarantine/ stay.
            """
    )

    @OptionGroup var options: MountOptions

    @Flag(help: "Say what would be removed, and remove nothing.")
    var dryRun = false

    func run() throws {
        let options = try self.options.resolvingProfile().options
        let stateDir = options.resolvedStateDir
        guard LocalStateReset.holdsState(stateDir) else {
            print("\(stateDir) holds no ubiqfs state; nothing to reset")
            return
        }
        // Held while we work, so no daemon starts on the state dir meanwhile.
        let lock: Int32
        switch StateDirLock.take(stateDir, create: true) {
        case .taken(let fd): lock = fd
        case .held: throw CommandFailure("\(stateDir) is in use by a running mount; unmount it first (ubiqfs unmount \(options.resolvedMountpoint))")
        case .absent: throw CommandFailure("cannot open \(stateDir)/lock: \(String(cString: strerror(errno)))")
        }
        defer { close(lock) }
        let blockers: LocalStateReset.Blockers
        do { blockers = try LocalStateReset.blockers(stateDir: stateDir) } catch {
            throw CommandFailure("cannot read \(stateDir)/state.db: \(error)")
        }
        guard blockers.isEmpty else { throw CommandFailure(Self.describe(blockers, stateDir: stateDir, mountpoint: options.resolvedMountpoint)) }
        if dryRun {
            let names = LocalStateReset.present(stateDir)
            print("nothing is pending; would remove from \(stateDir): \(names.joined(separator: ", "))")
            return
        }
        let kept = try KeptIgnoredItems.save(stateDir: stateDir)
        let removed = try LocalStateReset.clear(stateDir: stateDir)
        let keeping = kept > 0 ? "; \(kept) ignored item(s) kept in \(stateDir)/kept go back at their places at the next mount" : ""
        print("reset \(stateDir): removed \(removed.joined(separator: ", ")); the next mount starts over from the store\(keeping)")
    }

    static func describe(_ blockers: LocalStateReset.Blockers, stateDir: String, mountpoint: String) -> String {
        if let foreign = blockers.foreign {
            return "\(foreign); is --state-dir right? Nothing was removed"
        }
        if let damaged = blockers.damaged {
            return "the state database in \(stateDir) is damaged (\(damaged)); mount it once: the damaged database is quarantined and content not uploaded yet is recovered into the mount"
        }
        var lines = ["not reset: this device has work that is not in the store yet"]
        if blockers.changedCount > 0 {
            lines.append("  \(blockers.changedCount) item(s) with changes not uploaded: \(blockers.changedPaths.joined(separator: ", "))\(blockers.changedCount > blockers.changedPaths.count ? ", ..." : "")")
        }
        if !blockers.unrecordedPaths.isEmpty {
            lines.append("  file(s) whose local content differs from what was recorded (a crash mid-write?): \(blockers.unrecordedPaths.prefix(10).joined(separator: ", ")); check them in the mount, copy what you want to keep to new names, evict them (ubiqfs evict) and reset again")
        }
        if blockers.uncertainCommit { lines.append("  a commit whose outcome is not known yet") }
        for folder in blockers.pendingRecoveries { lines.append("  a recovery not copied back yet: \(folder)") }
        lines.append("mount it, run `ubiqfs sync --wait \(mountpoint)` until nothing is pending, unmount, and reset again")
        return lines.joined(separator: "\n")
    }
}
