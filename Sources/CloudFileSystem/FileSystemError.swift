import ItemModel

/// What went wrong in a filesystem operation, in the filesystem's own terms. Turned into
/// an errno in exactly one place (`ErrnoMapping`).
public struct FileSystemError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case notFound, exists, notDirectory, isDirectory, notEmpty, invalid, nameTooLong
        case notPermitted, notSupported, noAttribute, range, tooBig, io, noSpace, badHandle
        case unreachable, interrupted, busy, readOnly
        /// Internal: the operation needs the content first; the adapter downloads and retries.
        case needsDownload
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String = "", cause: (any Error)? = nil) {
        self.code = code
        self.message = message.isEmpty ? code.rawValue : message
        self.cause = cause
    }
}
