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
    /// Other devices' changes waiting for a file open for writing here, one line each (nil
    /// from a daemon of an earlier version, still running after an upgrade).
    public var held: [String]?
    /// Local changes that wait for those to land (`HeldScope`); nil when nothing is held.
    public var heldBack: Int?
    /// A read-only mount (nil from a daemon of an earlier version).
    public var readOnly: Bool?
    /// Files whose content waits to be uploaded, and their bytes (nil from an earlier daemon).
    public var pendingFiles: Int?
    public var pendingBytes: Int64?
    /// Items that stay on this device, never synced (nil from an earlier daemon).
    public var ignoredItems: Int?
    /// Other devices' pictures in this user's thumbnail cache, and pictures made here
    /// waiting to be sent (nil from an earlier daemon).
    public var thumbnailsInstalled: Int?
    public var thumbnailsToSend: Int?
    /// Content transfers per direction: queued, in flight, done and the rate.
    public var uploads: TransferGate.Snapshot?
    public var downloads: TransferGate.Snapshot?
    /// The store's use as this device's last collection measured it (format 2).
    public var collection: CollectionReport?
    /// Whole files uploading or downloading now, largest first (at most 20), for
    /// `ubiqfs status --watch` (nil from an earlier daemon).
    public var transfers: [FileTransfer]?
    public var conflicts: [String]
    public var errors: [String]
    /// The last 50 merges of another device's version with an edit made here.
    public var merges: [String]?
}

/// One file's transfer in flight: its path in the mount, which way, and how far.
public struct FileTransfer: Sendable, Codable, Equatable {
    public var path: String
    public var direction: String
    public var done: Int64
    public var total: Int64
}
