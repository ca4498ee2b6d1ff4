/// Whether an item's content is on this device.
public enum ContentState: Int, Sendable, Codable {
    /// Metadata only: real size and times, no local blocks (downloaded on open).
    case placeholder = 0
    /// The whole content is in the cache file named by the inode.
    case local = 1
}
