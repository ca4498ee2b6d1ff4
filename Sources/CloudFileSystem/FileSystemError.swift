import ItemModel
import SyncEngine

/// What went wrong in a filesystem operation, in the filesystem's own terms. Turned into
/// an errno in exactly one place (`ErrnoMapping`).
public enum FileSystemErrorCode: String, ErrorCode {
    case notFound, exists, notDirectory, isDirectory, notEmpty, invalid, nameTooLong
    case notPermitted, notSupported, noAttribute, range, tooBig, fileTooLarge, noDevice, io, noSpace, badHandle
    case unreachable, interrupted, busy, readOnly, tooManyLinks, crossDevice
    /// The file is not on this device, and the program only looks (`Lookers`): a
    /// thumbnailer is not the reason for a download.
    case notLocal
}

public typealias FileSystemError = CodedError<FileSystemErrorCode>

extension CodedError where Code == FileSystemErrorCode {
    public init(_ code: FileSystemErrorCode, _ message: String = "", cause: (any Error)? = nil) {
        self.init(code: code, message: message.isEmpty ? code.rawValue : message, cause: cause)
    }
}

extension CodedError where Code == FileSystemErrorCode {
    /// A failed wait for content (a download, a range of one), as the program should see
    /// it: a store that cannot be reached, Ctrl-C, an item gone meanwhile, a full disk; any
    /// other failure (a block that does not match its hash) is an I/O error.
    static func waitingForContent(_ error: any Error) -> FileSystemError {
        guard let error = error as? SyncError else {
            return FileSystemError(error is CancellationError ? .interrupted : .io, "\(error)", cause: error)
        }
        let code: FileSystemErrorCode = switch error.code {
        case .unreachable, .paused: .unreachable
        case .cancelled: .interrupted
        case .notFound: .notFound
        case .diskFull: .noSpace
        default: .io
        }
        return FileSystemError(code, error.message, cause: error)
    }
}
