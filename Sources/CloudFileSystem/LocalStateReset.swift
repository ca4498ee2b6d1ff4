import Foundation
import Glibc
import GRDB
import ItemModel
import MetadataStore
import SyncEngine

/// `ubiqfs reset`: forgets this device's local state (database and cache) so the next
/// mount starts over from the store, as iCloud's `ubcontrol -x` does. It refuses while
/// anything here is not in the store yet: a reset must never be how a change gets lost.
/// It reads the database read-only (no migration runs on a file that may not be ours) and
/// removes only the names ubiqfs itself puts in a state dir.
public enum LocalStateReset {
    /// What a reset removes: the database, the content cache and the daemon's leftovers.
    /// The log, the lock and `quarantine/` stay; anything else in the folder is not ours.
    public static let removable = [
        StateRecovery.databaseName, StateRecovery.databaseName + "-wal", StateRecovery.databaseName + "-shm",
        "cache", "control.sock", "store-verified", "unmount-result", "stopping",
    ]

    public static func holdsState(_ stateDir: String) -> Bool {
        access(stateDir + "/" + StateRecovery.databaseName, F_OK) == 0
    }

    /// The `removable` names that are there (a dangling symlink counts).
    public static func present(_ stateDir: String) -> [String] {
        removable.filter { name in
            var info = stat()
            return lstat(stateDir + "/" + name, &info) == 0
        }
    }

    /// What keeps a state dir from being reset, in words for people; empty when nothing does.
    public struct Blockers: Sendable {
        /// Paths (in the mount) of items with changes not committed yet, the first few.
        public var changedPaths: [String] = []
        public var changedCount = 0
        /// Files whose cached content does not match what the database recorded (a crash
        /// between a write and its bookkeeping): the bytes may be a change nobody uploaded.
        public var unrecordedPaths: [String] = []
        /// A commit was sent and its outcome is not known yet.
        public var uncertainCommit = false
        /// Quarantined databases whose unsynced content was not copied back yet.
        public var pendingRecoveries: [String] = []
        public var damaged: String?
        /// The folder's database is not a ubiqfs state database.
        public var foreign: String?

        public var isEmpty: Bool {
            changedCount == 0 && unrecordedPaths.isEmpty && !uncertainCommit && pendingRecoveries.isEmpty && damaged == nil && foreign == nil
        }
    }

    /// Reads what is pending; the caller holds the state dir's lock (no daemon runs).
    public static func blockers(stateDir: String) throws -> Blockers {
        var blockers = Blockers()
        let quarantine = stateDir + "/quarantine"
        if access(quarantine, F_OK) == 0 {
            for stamp in try FileManager.default.contentsOfDirectory(atPath: quarantine).sorted()
            where access(quarantine + "/" + stamp + "/" + StateRecovery.pendingMarker, F_OK) == 0 {
                blockers.pendingRecoveries.append(quarantine + "/" + stamp)
            }
        }
        let database = stateDir + "/" + StateRecovery.databaseName
        guard holdsState(stateDir) else { return blockers }
        if case .damaged(let reason) = try DatabaseHealth.check(path: database) {
            blockers.damaged = reason
            return blockers
        }
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: database, configuration: configuration)
        try queue.read { db in
            guard try db.tableExists("item"), try db.tableExists("setting"),
                try MetadataStore.setting(SettingKey.deviceID, db) != nil
            else {
                blockers.foreign = "\(database) is not a ubiqfs state database"
                return
            }
            let dirty = try ItemRow.dirtyRows(db)
            blockers.changedCount = dirty.count
            blockers.changedPaths = try dirty.prefix(10).map { row in
                row.deleted ? "\(row.itemName) (deleted)" : try ItemRow.path(of: row.inode, db)
            }
            blockers.uncertainCommit = try MetadataStore.setting(SettingKey.uncertainCommit, db) != nil
            let local = try ItemRow.cleanLocalFiles(includingDeleted: true, db)
            // An ignored file's size is not recorded (nothing is committed of it): kept apart.
            for row in local where !row.isIgnored {
                var info = stat()
                let path = stateDir + "/cache/" + row.inode.description
                if stat(path, &info) == 0, Int64(info.st_size) != row.size {
                    blockers.unrecordedPaths.append(try ItemRow.path(of: row.inode, db))
                }
            }
        }
        return blockers
    }

    /// Removes the `removable` names; returns those that were there.
    public static func clear(stateDir: String) throws -> [String] {
        let removed = present(stateDir)
        for name in removed {
            try FileManager.default.removeItem(atPath: stateDir + "/" + name)
        }
        try Syscall.fsyncDirectory(stateDir)
        return removed
    }
}
