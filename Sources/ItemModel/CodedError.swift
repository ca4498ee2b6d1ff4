/// The one error shape of ubiqfs: a code to branch on, a message for people, and the
/// cause it came from, so a log line shows the whole chain. Each module names its own
/// codes (`StoreErrorCode`...) and its error type is this struct over them, so typed
/// throws still tell the modules' errors apart.
public struct CodedError<Code: ErrorCode>: Error, CustomStringConvertible, Sendable {
    public var code: Code
    public var message: String
    public var cause: (any Error)?

    public init(code: Code, message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        var text = "\(message) [\(code)]"
        if let cause { text += ": \(cause)" }
        return text
    }
}

/// The codes of one module's errors.
public protocol ErrorCode: Sendable, Hashable, CustomStringConvertible {}

extension ErrorCode where Self: RawRepresentable, RawValue == String {
    public var description: String { rawValue }
}
