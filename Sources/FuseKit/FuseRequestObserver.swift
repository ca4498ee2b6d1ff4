/// Hears of every kernel request as it comes and as its reply is sent (metrics, health):
/// called on libfuse threads and on whatever thread replies, so it must only record.
public protocol FuseRequestObserver: Sendable {
    func started(_ operation: FuseOperationKind)
    /// `nanoseconds` from the request's arrival to its reply; `error` is 0 on success.
    func finished(_ operation: FuseOperationKind, nanoseconds: UInt64, error: Int32)
}
