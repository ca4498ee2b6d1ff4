import ItemModel

/// Why a store operation failed. `unreachable` is kept apart from everything else:
/// an unreachable store must never be mistaken for missing or deleted data.
/// `configuration`: the store is not set up right (no such bucket, no credentials, a bad
/// address): retrying will not help, the user must act. `cancelled`: the caller stopped
/// waiting (an unmount, Ctrl-C); whether a write landed is not known.
public enum StoreErrorCode: String, ErrorCode {
    case notFound, unreachable, accessDenied, invalidKey, io, corrupt, unsupported, configuration, cancelled
}

public typealias StoreError = CodedError<StoreErrorCode>
