import ContainerStore
import ContentCache
import Glibc
import ItemModel

/// Why a sync step failed. `unreachable` means "try later", never "deleted"; `diskFull`
/// is this device's disk, not the store (ENOSPC for a reader waiting on a download).
public enum SyncErrorCode: String, ErrorCode {
    case unreachable, paused, corrupt, store, metadata, cache, diskFull, container, cancelled, notFound, readOnly, invalid, busy, locked
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

    /// A lower error as a sync error saying what was being done; a store's code survives
    /// where it matters (unreachable: try later; not found; corrupt).
    static func wrap(_ error: any Error, _ message: String) -> SyncError {
        if let error = error as? SyncError { return error }
        if let error = error as? StoreError {
            let code: SyncErrorCode = switch error.code {
            case .unreachable: .unreachable
            case .notFound: .notFound
            case .corrupt: .corrupt
            case .cancelled: .cancelled
            default: .store
            }
            return SyncError(code: code, message: message, cause: error)
        }
        return SyncError(code: .store, message: message, cause: error)
    }
}

extension Task where Success == Never, Failure == Never {
    static func checkCancellation(or error: SyncError) throws(SyncError) {
        if Task.isCancelled { throw error }
    }
}
