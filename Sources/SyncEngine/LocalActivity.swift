import Inodes
import ItemModel

/// What the sync engine must know about local use of an item, answered by the
/// filesystem's handle table (in memory, no locks beyond its own Mutex).
public protocol LocalActivity: Sendable {
    /// A program has the item open for writing: a remote version waits until it is closed.
    func hasWriters(_ ino: Inode) -> Bool
    /// Any item is open for writing: when none is and nothing is held, no remote change
    /// needs the checks for holding.
    var hasAnyWriters: Bool { get }
    /// Open for writing and written since the last fsync: not uploaded until closed or fsynced.
    func isBeingWritten(_ ino: Inode) -> Bool
    /// Bumped by every local content change; an upload is committed as clean only if unchanged.
    func writeGeneration(_ ino: Inode) -> UInt64
    /// Called inside the commit transaction: true (and the item's content counts as clean)
    /// if no write came since `generation`; atomic with respect to writers. `blocks`: the
    /// content committed, from which writes are followed (`writtenRanges`).
    func commitContent(_ ino: Inode, generation: UInt64, blocks: [BlockReference]) -> Bool
    /// What was written since the content was a committed version, if every change since
    /// was followed (none lost with a restart, none of an unknown extent).
    func writtenRanges(_ ino: Inode) -> WrittenRanges?
    /// The engine replaced the item's local content (a merge installed): the writes
    /// followed since its commit no longer describe it.
    func contentReplaced(_ ino: Inode)
    /// The item's local content was discarded (it follows a remote version now): the next
    /// local write is a new change, to be recorded in the database again.
    func contentDiscarded(_ ino: Inode)
    /// The kernel or an open handle still uses the inode, so its row must stay.
    func isReferenced(_ ino: Inode) -> Bool
}
