import Inodes
import ItemModel

/// What applying one journal record changed locally, beyond the database itself.
struct ApplyOutcome: Sendable {
    var invalidations: [KernelInvalidation] = []
    /// Cache files to drop once the transaction is committed.
    var droppedContent: [Inode] = []
    var conflicts: [String] = []
    var refused: [String] = []
    /// Files that are placeholders because of this record (new, or changed elsewhere): pinned ones are prefetched.
    var placeholders: [Inode] = []
    /// For the watch API; empty when nobody watches.
    var events: [ChangeEvent] = []
    /// Folders brought back only for another device's change and to be pushed
    /// (`RecordApplier.undelete`), by id, with their change generation then; carried from
    /// record to record by the engine.
    var resurrected: [ItemID: Int64] = [:]
    /// A change was held for a local writer, or a held one applied: the engine's list of
    /// held changes must be read again.
    var heldChanged = false
}
