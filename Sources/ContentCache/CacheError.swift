import Glibc
import ItemModel

/// A failure of the local content cache; `diskFull` reaches the writing program as ENOSPC.
public struct CacheError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case io, diskFull, notFound, corrupt
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?

    public init(code: Code, message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    init(_ message: String, _ error: SystemError) {
        let code: Code = switch error.errno {
        case ENOSPC, EDQUOT: .diskFull
        case ENOENT: .notFound
        default: .io
        }
        self.init(code: code, message: message, cause: error)
    }
}
