/// Keys of this device's settings in the state database.
enum SettingKey {
    static let lastSeq = "lastSeq"
    static let deviceID = "deviceID"
    static let containerID = "containerID"
    /// An `UncertainCommit` (JSON) until the pull decides whose record its seq holds.
    static let uncertainCommit = "uncertainCommit"
}
