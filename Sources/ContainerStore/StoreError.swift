import ItemModel

/// Why a store operation failed. `unreachable` is kept apart from everything else:
/// an unreachable store must never be mistaken for missing or deleted data.
/// `configuration`: the store is not set up right (no such bucket, no credentials, a bad
/// address): retrying will not help, the user must act.
public enum StoreErrorCode: String, ErrorCode {
    case notFound, unreachable, accessDenied, invalidKey, io, corrupt, unsupported, configuration
}

public typealias StoreError = CodedError<StoreErrorCode>
