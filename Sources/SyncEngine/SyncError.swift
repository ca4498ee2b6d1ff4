import ItemModel

/// Why a sync step failed. `unreachable` means "try later", never "deleted".
public enum SyncErrorCode: String, ErrorCode {
    case unreachable, paused, waiting, corrupt, store, metadata, cache, container, cancelled, notFound
}

public typealias SyncError = CodedError<SyncErrorCode>
