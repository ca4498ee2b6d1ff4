/// Keys of this device's settings in the state database.
public enum SettingKey {
    public static let lastSeq = "lastSeq"
    public static let deviceID = "deviceID"
    public static let containerID = "containerID"
    /// The container's `container.json`, for starting while the store is unreachable.
    public static let containerInfo = "containerInfo"
    /// An `UncertainCommit` (JSON) until the pull decides whose record its seq holds.
    public static let uncertainCommit = "uncertainCommit"
    /// The container's settings in force (`ContainerSettings`, JSON), and a change made
    /// here waiting for the next record of this device.
    public static let containerSettings = "containerSettings"
    public static let pendingSettings = "pendingSettings"
    /// The checkpoint this device started from without the history before it.
    public static let historyFrom = "historyFrom"
    /// The last collection's `CollectionReport` (JSON), for `ubiqfs status`.
    public static let lastCollection = "lastCollection"
    /// Set when this device applied (or committed) journal record 1, or joined from a
    /// checkpoint with the history object before it: it knows every version and delete
    /// within the retention, so it may collect.
    public static let wholeHistory = "wholeHistory"
    /// Checkpoints the collector has seen and since when (JSON, seq to ns): it compacts up
    /// to one only once it has been there for the compaction horizon.
    public static let checkpointsSeen = "checkpointsSeen"
    /// The first record of format 2 this device applied or committed: a container
    /// upgraded in place may be collected only once every later writer knows it.
    public static let formatTwoFrom = "formatTwoFrom"
    /// The newest format of a record applied or committed here (`ContainerFormat.seen`).
    public static let formatSeen = "formatSeen"
    /// The SHA-256 of the last record applied or committed here, as stored: the next
    /// record names it (`JournalRecord.prev`), or the store is showing a fork.
    public static let lastRecordHash = "lastRecordHash"
    /// The patterns of this device's own ignore list at the last start: a change applies to
    /// the items already here.
    public static let deviceIgnoreList = "deviceIgnoreList"
}
