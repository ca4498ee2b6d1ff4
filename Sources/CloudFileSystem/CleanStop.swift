import MetadataStore
import SyncEngine

/// Whether the last daemon of this state dir stopped cleanly: a mark in the database,
/// written durably after the last push of a clean stop and removed at the next start. A
/// start that finds none follows a kill, a kernel crash or a power cut, and checks the
/// cache against the database more closely (`StateReconciler`).
public enum CleanStop {
    static let key = "cleanStop"

    /// True if the last stop was clean, or there was none (a new state dir: no device
    /// identity yet); the mark is removed (durably with the rest of startup,
    /// `DeviceStack.open`).
    static func consume(_ metadata: MetadataStore) throws(MetadataError) -> Bool {
        try metadata.write { db in
            guard try MetadataStore.setting(SettingKey.deviceID, db) != nil else { return true }
            let clean = try MetadataStore.setting(key, db) != nil
            if clean { try MetadataStore.removeSetting(key, db) }
            return clean
        }
    }

    /// After the last push of a clean stop: nothing changes the state after this.
    static func mark(_ metadata: MetadataStore) throws(MetadataError) {
        try metadata.durableWrite { db in try MetadataStore.setSetting(key, "1", db) }
    }
}
