import ItemModel

/// Why chunking could not start. `invalidParameters`: an average that is no power of two in
/// the range chunkers agree on (it comes from a container's settings, so it is checked, not
/// trusted).
public enum ChunkingErrorCode: String, ErrorCode {
    case invalidParameters
}

public typealias ChunkingError = CodedError<ChunkingErrorCode>
