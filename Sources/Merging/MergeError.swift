import ItemModel

/// Why two sides' changes were not merged into one text.
public enum MergeErrorCode: String, ErrorCode {
    /// An input is not UTF-8 text (invalid UTF-8, or a NUL byte).
    case notText
    /// Both sides changed the same or adjacent lines, differently.
    case overlap
    /// A side is too different from the base to compare line by line within the budget.
    case tooManyChanges
}

public typealias MergeError = CodedError<MergeErrorCode>
