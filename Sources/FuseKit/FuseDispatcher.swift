/// What libfuse's userdata points to: retained through `Unmanaged` by the session and released
/// only after fuse_session_destroy, so no callback can outlive it.
final class FuseDispatcher: @unchecked Sendable {
    let operations: any FuseOperations
    /// Set once by `FuseSession.init`, before the session is mounted and any request can arrive;
    /// requests run inside `FuseSession.run`, so the session is alive whenever this is read.
    unowned(unsafe) var session: FuseSession?

    init(operations: any FuseOperations) {
        self.operations = operations
    }
}
