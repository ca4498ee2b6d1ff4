import ItemModel

/// A file version read from the cache and stored as blocks, with the write generation it
/// was read at: it is committed as the item's clean state only if no write came since.
struct ContentUpload: Sendable {
    var blocks: [BlockReference]
    var size: Int64
    var mtime: Int64
    var writeGeneration: UInt64
}
