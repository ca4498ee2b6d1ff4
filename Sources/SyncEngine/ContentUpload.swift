import ItemModel

/// A file version read from the cache and stored as blocks, with the write generation it
/// was read at: it is committed as the item's clean state only if no write came since.
struct ContentUpload: Sendable {
    var blocks: [BlockReference]
    var size: Int64
    var mtime: Int64
    var writeGeneration: UInt64
    /// Objects the blocks name that this push did not write and the committed version does
    /// not name (another file's, by `ChunkIndex`): rule W3 asks the store about them.
    var reused: Set<String> = []
}
