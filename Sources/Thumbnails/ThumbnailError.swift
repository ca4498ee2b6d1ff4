import ItemModel

/// Why a thumbnail could not be made, read or installed.
public enum ThumbnailErrorCode: String, ErrorCode {
    /// Not a PNG, or one whose chunks do not hold together.
    case malformed
    /// A PNG larger than the size it was asked for.
    case tooLarge
    /// An argument no cache or PNG can take: a size that is not a freedesktop size, a text
    /// key or value that is not Latin-1.
    case invalid
    /// No thumbnailer handles the item's type.
    case unsupported
    /// The thumbnailer failed or made nothing.
    case thumbnailerFailed
    /// The thumbnailer ran out of time (a busy machine, a large file): worth another try.
    case timedOut
    /// Reading or writing the cache or a temporary file failed.
    case io
}

public typealias ThumbnailError = CodedError<ThumbnailErrorCode>
