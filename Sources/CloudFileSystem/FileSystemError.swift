import ItemModel

/// What went wrong in a filesystem operation, in the filesystem's own terms. Turned into
/// an errno in exactly one place (`ErrnoMapping`).
public enum FileSystemErrorCode: String, ErrorCode {
    case notFound, exists, notDirectory, isDirectory, notEmpty, invalid, nameTooLong
    case notPermitted, notSupported, noAttribute, range, tooBig, fileTooLarge, noDevice, io, noSpace, badHandle
    case unreachable, interrupted, busy, readOnly
    /// Internal: the operation needs the content first; the adapter downloads and retries.
    case needsDownload
    /// Internal: the read needs blocks still downloading; the adapter waits and retries.
    case needsRange
}

public typealias FileSystemError = CodedError<FileSystemErrorCode>

extension CodedError where Code == FileSystemErrorCode {
    public init(_ code: FileSystemErrorCode, _ message: String = "", cause: (any Error)? = nil) {
        self.init(code: code, message: message.isEmpty ? code.rawValue : message, cause: cause)
    }
}
