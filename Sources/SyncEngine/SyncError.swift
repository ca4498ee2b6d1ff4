import ItemModel

/// Why a sync step failed. `unreachable` means "try later", never "deleted".
public struct SyncError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case unreachable, paused, waiting, corrupt, store, metadata, cache, container, cancelled, notFound
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
