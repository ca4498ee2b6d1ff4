import ContentCache
import Glibc
import MetadataStore

/// The only place where errors become errno values for the kernel.
enum ErrnoMapping {
    static func errno(for error: any Error) -> Int32 {
        switch error {
        case let error as FileSystemError: errno(error.code)
        case let error as MetadataError: error.code == .diskFull ? ENOSPC : EIO
        case let error as CacheError: error.code == .diskFull ? ENOSPC : EIO
        case is CancellationError: EINTR
        default: EIO
        }
    }

    static func errno(_ code: FileSystemErrorCode) -> Int32 {
        switch code {
        case .notFound: ENOENT
        case .exists: EEXIST
        case .notDirectory: ENOTDIR
        case .isDirectory: EISDIR
        case .notEmpty: ENOTEMPTY
        case .invalid: EINVAL
        case .nameTooLong: ENAMETOOLONG
        case .notPermitted: EPERM
        case .notSupported: EOPNOTSUPP
        case .noAttribute: ENODATA
        case .range: ERANGE
        case .tooBig: E2BIG
        case .fileTooLarge: EFBIG
        case .noDevice: ENXIO
        case .io: EIO
        case .noSpace: ENOSPC
        case .badHandle: EBADF
        case .unreachable: ENETUNREACH
        case .interrupted: EINTR
        case .busy: EBUSY
        case .readOnly: EROFS
        case .tooManyLinks: EMLINK
        case .crossDevice: EXDEV
        case .notLocal: EAGAIN
        }
    }
}
