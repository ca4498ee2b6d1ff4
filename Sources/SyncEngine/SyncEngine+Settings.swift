import ItemModel
import MetadataStore

/// The container's settings (`ContainerSettings`): every device follows the journal's, so
/// a change is a record, committed like any local change.
extension SyncEngine {
    /// The settings in force (a change made here counts once its record is committed).
    public func settings() async throws(SyncError) -> ContainerSettings {
        try await calls.read("cannot read the container's settings") { db in try ContainerSettings.current(db) }
    }

    /// Sets the retention of versions and of the trash (seconds; nil keeps what is set) for
    /// every device: committed with this device's next record, which this waits for. The
    /// next prune applies it.
    public func setRetention(versions: Int64?, trash: Int64?) async throws(SyncError) -> ContainerSettings {
        if readOnly { throw SyncError(code: .readOnly, message: "the mount is read-only: it commits nothing") }
        let valid = try await calls.write("cannot record the new retention") { db in
            let change = SettingsChange(versions: versions, trash: trash)
            guard change.applied(to: .standard).retention.isValid else { return false }
            try ContainerSettings.makePending(change, db)
            return true
        }
        guard valid else { throw SyncError(code: .invalid, message: "a retention is 0 to 36525 days") }
        lastPrune = nil
        try await syncNow()
        return try await settings()
    }
}
