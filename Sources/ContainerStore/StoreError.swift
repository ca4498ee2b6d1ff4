import ItemModel

/// Why a store operation failed. `unreachable` is kept apart from everything else:
/// an unreachable store must never be mistaken for missing or deleted data.
public struct StoreError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case notFound, unreachable, accessDenied, invalidKey, io, corrupt, unsupported
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
}
