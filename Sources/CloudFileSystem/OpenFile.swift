import Inodes
import SyncEngine

/// An open file: the descriptor of the cache file version it opened (kept even if a newer
/// version is installed or the item is deleted), and how it was opened.
struct OpenFile: Sendable {
    var ino: Inode
    var fd: Int32
    var writable: Bool
    var append: Bool
    /// Opened around the page cache (FOPEN_DIRECT_IO): a write-only open.
    var directIO = false
    /// Its writes go around the kernel's page cache (`directIO`, or `O_DIRECT` asked by the
    /// program): pages another descriptor cached are not updated by them.
    var bypassesPageCache = false
    /// O_SYNC or O_DSYNC with writes around the page cache: the kernel sends an fsync after
    /// each write only on the cached path, so these handles sync their own writes.
    var syncsWrites = false
    /// Set for a file opened while partial: the fill whose blocks every read checks (and
    /// fetches), and how far this reader's readahead reaches.
    var partial: PartialContent? = nil
    var readahead: Readahead? = nil
    /// For a program that only looks (`Lookers`) at a file not here: reads end here, as
    /// at the end of the file (the handle is direct, so the kernel's size stays).
    var readLimit: Int64? = nil
}
