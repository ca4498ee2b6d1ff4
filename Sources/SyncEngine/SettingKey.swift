/// Keys of this device's settings in the state database.
enum SettingKey {
    static let lastSeq = "lastSeq"
    static let deviceID = "deviceID"
    static let containerID = "containerID"
    /// The container's `container.json`, for starting while the store is unreachable.
    static let containerInfo = "containerInfo"
    /// An `UncertainCommit` (JSON) until the pull decides whose record its seq holds.
    static let uncertainCommit = "uncertainCommit"
}
