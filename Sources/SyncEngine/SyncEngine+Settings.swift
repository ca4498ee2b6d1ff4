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

    /// Turns merging of the named kinds (`MergeKinds.names`) on or off for every device:
    /// committed with this device's next record, which this waits for.
    public func setMerge(_ kinds: [String: Bool]) async throws(SyncError) -> ContainerSettings {
        if readOnly { throw SyncError(code: .readOnly, message: "the mount is read-only: it commits nothing") }
        if let unknown = kinds.keys.first(where: { !MergeKinds.names.contains($0) }) {
            throw SyncError(code: .invalid, message: "no kind of merge is called \(unknown) (kinds: \(MergeKinds.names.joined(separator: ", ")))")
        }
        guard format.current >= 4 else {
            throw SyncError(code: .invalid, message: "this container is format \(format.current): merging needs format 4 (a device of this version upgrades it at its next start)")
        }
        try await calls.write("cannot record the merge setting") { db in
            try ContainerSettings.makePending(SettingsChange(merge: kinds), db)
        }
        try await syncNow()
        return try await settings()
    }
}
