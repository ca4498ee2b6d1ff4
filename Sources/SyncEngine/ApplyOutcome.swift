import Inodes
import ItemModel
import MetadataStore

/// What applying one journal record changed locally, beyond the database itself.
struct ApplyOutcome: Sendable {
    var invalidations: [KernelInvalidation] = []
    /// Cache files to drop once the transaction is committed.
    var droppedContent: [Inode] = []
    /// Local files whose mtime another device changed (their content not): the cache
    /// file's mtime, which `stat` shows for a local file, follows.
    var mtimes: [(ino: Inode, mtime: Int64)] = []
    var conflicts: [String] = []
    /// Merges of another device's version with the edit made here (`SyncEngine+Merge`).
    var merges: [String] = []
    var refused: [String] = []
    /// The record as applied: its splices expanded (what settling our own commit reads).
    var applied: JournalRecord?
    /// Files that are placeholders because of this record (new, or changed elsewhere): pinned ones are prefetched.
    var placeholders: [Inode] = []
    /// For the watch API; empty when nobody watches.
    var events: [ChangeEvent] = []
    /// Folders brought back only for another device's change and to be pushed
    /// (`RecordApplier.undelete`), by id, with their change generation then; carried from
    /// record to record by the engine.
    var resurrected: [ItemID: Int64] = [:]
    /// Changes now held for a local writer (`HeldChanges`), and items whose held change
    /// was applied: what the engine's list of held changes becomes.
    var held: [ItemID: HeldChange] = [:]
    var released: Set<ItemID> = []
    /// Items upserted or deleted (`ThumbnailEvents.changed`).
    var changedItems: [ItemID] = []
    /// The record carried the container's settings.
    var settingsChanged = false
}
