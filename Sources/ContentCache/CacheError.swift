import Glibc
import ItemModel

/// A failure of the local content cache; `diskFull` reaches the writing program as ENOSPC.
public enum CacheErrorCode: String, ErrorCode {
    case io, diskFull, notFound, corrupt
}

public typealias CacheError = CodedError<CacheErrorCode>

extension CodedError where Code == CacheErrorCode {
    init(_ message: String, _ error: SystemError) {
        let code: CacheErrorCode = switch error.errno {
        case ENOSPC, EDQUOT: .diskFull
        case ENOENT: .notFound
        default: .io
        }
        self.init(code: code, message: message, cause: error)
    }
}
