import ItemModel

/// A failure of the local state database (disk full, I/O error, corruption).
public struct MetadataError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case open, query, diskFull, corrupt, notFound, constraint
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
