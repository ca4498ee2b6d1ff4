import Foundation
import Glibc
import ItemModel
import MetadataStore
import SyncEngine

/// `ubiqfs reset`: forgets this device's local state (database and cache) so the next
/// mount starts over from the store, as iCloud's `ubcontrol -x` does. It refuses while
/// anything here is not in the store yet: a reset must never be how a change gets lost.
public enum LocalStateReset {
    /// What keeps a state dir from being reset, in words for people; empty when nothing does.
    public struct Blockers: Sendable {
        /// Paths (in the mount) of items with changes not committed yet, the first few.
        public var changedPaths: [String] = []
        public var changedCount = 0
        /// A commit was sent and its outcome is not known yet.
        public var uncertainCommit = false
        /// Quarantined databases whose unsynced content was not copied back yet.
        public var pendingRecoveries: [String] = []
        public var damaged: String?

        public var isEmpty: Bool {
            changedCount == 0 && !uncertainCommit && pendingRecoveries.isEmpty && damaged == nil
        }
    }

    /// Reads what is pending; the caller holds the state dir's lock (no daemon runs).
    public static func blockers(stateDir: String) throws -> Blockers {
        var blockers = Blockers()
        let quarantine = stateDir + "/quarantine"
        for stamp in ((try? FileManager.default.contentsOfDirectory(atPath: quarantine)) ?? []).sorted()
        where access(quarantine + "/" + stamp + "/" + StateRecovery.pendingMarker, F_OK) == 0 {
            blockers.pendingRecoveries.append(quarantine + "/" + stamp)
        }
        let database = stateDir + "/" + StateRecovery.databaseName
        guard access(database, F_OK) == 0 else { return blockers }
        if case .damaged(let reason) = try DatabaseHealth.check(path: database) {
            blockers.damaged = reason
            return blockers
        }
        let metadata = try MetadataStore(path: database)
        try metadata.read { db in
            let dirty = try ItemRow.dirtyRows(db)
            blockers.changedCount = dirty.count
            blockers.changedPaths = try dirty.prefix(10).map { row in
                row.deleted ? "\(row.itemName) (deleted)" : try ItemRow.path(of: row.inode, db)
            }
            blockers.uncertainCommit = try MetadataStore.setting(SettingKey.uncertainCommit, db) != nil
        }
        return blockers
    }

    /// Removes everything in the state dir but `keep` (the lock the caller holds) and
    /// `quarantine/` (damaged databases kept for inspection); returns what it removed.
    public static func clear(stateDir: String, keep: Set<String>) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: stateDir).sorted()
        var removed: [String] = []
        for name in names where !keep.contains(name) && name != "quarantine" {
            try FileManager.default.removeItem(atPath: stateDir + "/" + name)
            removed.append(name)
        }
        try Syscall.fsyncDirectory(stateDir)
        return removed
    }
}
