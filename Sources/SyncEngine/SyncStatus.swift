/// What `ubiqfs status` shows: JSON on the control socket.
public struct SyncStatus: Sendable, Codable {
    public var state: String
    public var store: String
    public var device: String
    public var lastSeq: UInt64
    public var pendingItems: Int
    public var downloading: Int
    public var lastSync: Double?
    public var lastError: String?
    public var conflicts: [String]
    public var errors: [String]
}
