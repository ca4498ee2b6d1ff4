import Inodes

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
    /// Set while the content is still downloading: the download's generation, whose
    /// blocks are checked before every read.
    var stream: UInt64? = nil
}
