import ContentCache
import Glibc
import ItemModel

/// Why a sync step failed. `unreachable` means "try later", never "deleted"; `diskFull`
/// is this device's disk, not the store (ENOSPC for a reader waiting on a download).
public enum SyncErrorCode: String, ErrorCode {
    case unreachable, paused, waiting, corrupt, store, metadata, cache, diskFull, container, cancelled, notFound
}

public typealias SyncError = CodedError<SyncErrorCode>

extension CodedError where Code == SyncErrorCode {
    /// A failed write to the cache, told apart as `diskFull` when the disk was full.
    static func cacheWrite(_ message: String, _ error: any Error) -> SyncError {
        let full = switch error {
        case let error as SystemError: error.errno == ENOSPC || error.errno == EDQUOT
        case let error as CacheError: error.code == .diskFull
        default: false
        }
        return SyncError(code: full ? .diskFull : .cache, message: message, cause: error)
    }
}
