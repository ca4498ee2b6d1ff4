import ItemModel

/// A change of the container's settings made here and not committed yet: only the fields
/// someone set, so a record of ours carries them on top of what is in force when it is
/// written (another device's change of another field stays).
struct SettingsChange: Codable, Equatable, Sendable {
    var versions: Int64?
    var trash: Int64?

    func applied(to settings: ContainerSettings) -> ContainerSettings {
        var settings = settings
        settings.retention.versions = versions ?? settings.retention.versions
        settings.retention.trash = trash ?? settings.retention.trash
        return settings
    }

    /// This change, then `later` on top of it.
    func merged(with later: SettingsChange) -> SettingsChange {
        SettingsChange(versions: later.versions ?? versions, trash: later.trash ?? trash)
    }
}
