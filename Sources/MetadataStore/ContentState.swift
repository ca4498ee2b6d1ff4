/// Whether an item's content is on this device.
public enum ContentState: Int, Sendable, Codable {
    /// Metadata only: real size and times, no local blocks (fetched as they are read).
    case placeholder = 0
    /// The whole content is in the cache file named by the inode.
    case local = 1
    /// Some blocks of the committed version are in the cache file (a sparse file of the
    /// item's size), the others are holes: which ones, `FetchedBlocks` says. Never changed
    /// here: a write makes the file local first.
    case partial = 2

    /// Some or all of the content is in the cache file.
    public var hasCacheFile: Bool { self != .placeholder }
}
