/// A store object that cannot be used: malformed, from an unknown format, or breaking a rule.
public struct RecordError: UbiqError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case encoding, malformed, tooLarge, unsupportedFormat, invalid
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
