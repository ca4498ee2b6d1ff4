import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Changes held for a writer here (`HeldChanges`): holding one, and applying it once
/// nothing holds it any more.
extension RecordApplier {
    /// Holds a change to an item that a program here has open for writing and has not
    /// written (`blockingWriter`), or that has a change held already (the newer one replaces
    /// it): the rest of the record goes on. True if held.
    mutating func hold(_ operation: JournalOperation, seq: UInt64) throws -> Bool {
        let earlier = mayHold ? try HeldChanges.find(operation.itemID, db) : nil
        let blocking = mayHold ? try Self.blockingWriter(operation, db, activity) : nil
        // A newer change replacing a held one waits for what that one waited for.
        let wait = try blocking.map { ($0, false) } ?? earlier.map { ($0.waitingFor, $0.isMerge) } ?? mergeWait(operation).map { ($0, true) }
        guard let (writer, isMerge) = wait else { return false }
        let change = HeldChange(
            seq: seq, operation: operation, device: committer.device, time: committer.time, waitingFor: writer, isMerge: isMerge
        )
        try HeldChanges.hold(change, db)
        // A version of the file whatever this device does with it (a later change may
        // replace the held one before it lands).
        if case .upsert(let item) = operation { try recordVersion(item, seq: seq) }
        outcome.held[change.itemID] = change
        if let row = try ItemRow.find(id: operation.itemID, db) {
            note(.held, row.inode, detail: change.isMerge ? "the change of journal \(seq) waits to merge with the edit here"
                : "the change of journal \(seq) waits until \(writer) is closed here")
        }
        return true
    }

    /// The path of the file open for writing here (and not written) that a remote operation
    /// must not touch yet: the file itself for a content change, or one inside what a delete
    /// takes.
    /// Nil if the operation can be applied now. A file written here is no reason to wait:
    /// its change meets the remote one as a conflict, both kept.
    static func blockingWriter(_ operation: JournalOperation, _ db: Database, _ activity: any LocalActivity) throws -> String? {
        switch operation {
        case .upsert(let item):
            guard item.kind == .file, let row = try ItemRow.find(id: item.id, db), !row.deleted, row.itemKind == .file,
                  !row.dirtyFlags.contains(.content), activity.hasWriters(row.inode) else { return nil }
            let committed = try BaseSnapshots.find(item.id, db)?.blocks ?? row.blockList
            return (item.blocks ?? []) != committed ? try ItemRow.path(of: row.inode, db) : nil
        case .delete(let id):
            guard let row = try ItemRow.find(id: id, db), !row.deleted else { return nil }
            for ino in try ItemRow.subtreeStoppingAtChanges(of: row.inode, db) {
                guard let item = try ItemRow.find(ino: ino, db) else { continue }
                if item.dirtyFlags.isEmpty && activity.hasWriters(ino) { return try ItemRow.path(of: ino, db) }
            }
            return nil
        }
    }

    /// Whether a held change still waits: its operation would be held now, or it is a delete
    /// that replaced a held new version of a file still open for writing here and not
    /// written (changed here otherwise, the delete alone would not wait; released, it would
    /// drop that version and push the item with this device's older content).
    static func stillHeld(_ change: HeldChange, _ db: Database, _ activity: any LocalActivity) throws -> Bool {
        // The merge job settles these (`SyncEngine.settleMerges`).
        if change.isMerge { return true }
        if try blockingWriter(change.operation, db, activity) != nil { return true }
        guard case .delete(let id) = change.operation, let row = try ItemRow.find(id: id, db), !row.deleted,
              row.itemKind == .file else { return false }
        return !row.dirtyFlags.contains(.content) && activity.hasWriters(row.inode)
    }

    /// Applies a held change once nothing holds it any more (its writer closed, or the
    /// daemon restarted), by the usual rules: a write made meanwhile makes a conflict copy,
    /// the committed version keeping the name.
    mutating func applyHeld(_ change: HeldChange) throws {
        committer = (change.device, change.time)
        comingLater = [:]
        displaced = [:]
        try HeldChanges.remove(change.itemID, db)
        outcome.released.insert(change.itemID)
        switch change.operation {
        case .upsert(let item): try upsert(item, seq: change.seq, own: false)
        case .delete(let id): try delete(id)
        }
        try settleDisplaced()
        try trash.record(seq: change.seq, device: change.device, time: change.time, batch: nil, db)
        try resolveEvents()
    }
}
