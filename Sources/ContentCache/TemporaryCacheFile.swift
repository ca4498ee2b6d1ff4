import Glibc

/// A cache file being written (a download): invisible until `ContentCache.install`
/// renames it into place, so a reader never sees half of a version.
public struct TemporaryCacheFile: Sendable {
    public let fd: Int32
    public let path: String
}
