/// What the cache file says about an item's local content: the local truth for size,
/// mtime and blocks (`du` shows what is really on this disk).
public struct CacheFileStatus: Sendable, Hashable {
    public var size: Int64
    /// Nanoseconds since the epoch.
    public var mtime: Int64
    /// 512-byte blocks allocated.
    public var blocks: Int64
}
