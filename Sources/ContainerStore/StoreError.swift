import ItemModel

/// Why a store operation failed. `unreachable` is kept apart from everything else:
/// an unreachable store must never be mistaken for missing or deleted data.
public enum StoreErrorCode: String, ErrorCode {
    case notFound, unreachable, accessDenied, invalidKey, io, corrupt, unsupported
}

public typealias StoreError = CodedError<StoreErrorCode>
