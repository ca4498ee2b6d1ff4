import ItemModel

/// A failure of the local state database (disk full, I/O error, corruption).
public enum MetadataErrorCode: String, ErrorCode {
    case open, query, diskFull, io, corrupt, notFound, constraint
}

public typealias MetadataError = CodedError<MetadataErrorCode>
