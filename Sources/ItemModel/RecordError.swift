/// Why a store object cannot be used: malformed, from an unknown format, or breaking a rule.
public enum RecordErrorCode: String, ErrorCode {
    case encoding, malformed, tooLarge, unsupportedFormat, invalid
}

public typealias RecordError = CodedError<RecordErrorCode>
