internal import CFuse3

/// What `open`, `create` and `opendir` hand back to the kernel (`struct fuse_file_info`).
public struct FuseOpenOptions: Sendable {
    /// Passed back unchanged on every later call for this open file (fi->fh).
    public var handle: UInt64
    /// Keep the page cache from the previous open: set it when the content is known to be unchanged.
    public var keepCache: Bool
    /// Bypass the page cache: every read and write reaches the filesystem.
    public var directIO: Bool
    public var nonSeekable: Bool
    /// For `opendir`: let the kernel cache the directory listing.
    public var cacheDirectory: Bool
    /// The kernel need not send `flush` on close.
    public var noFlush: Bool

    public init(
        handle: UInt64,
        keepCache: Bool = false,
        directIO: Bool = false,
        nonSeekable: Bool = false,
        cacheDirectory: Bool = false,
        noFlush: Bool = false
    ) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
        self.nonSeekable = nonSeekable
        self.cacheDirectory = cacheDirectory
        self.noFlush = noFlush
    }

    var fileInfo: fuse_file_info {
        var info = fuse_file_info()
        info.fh = handle
        cfuse_fi_set_keep_cache(&info, keepCache ? 1 : 0)
        cfuse_fi_set_direct_io(&info, directIO ? 1 : 0)
        cfuse_fi_set_nonseekable(&info, nonSeekable ? 1 : 0)
        cfuse_fi_set_cache_readdir(&info, cacheDirectory ? 1 : 0)
        cfuse_fi_set_noflush(&info, noFlush ? 1 : 0)
        return info
    }
}
