import ItemModel

/// A change of the container's settings made here and not committed yet: only the fields
/// someone set, so a record of ours carries them on top of what is in force when it is
/// written (another device's change of another field stays).
struct SettingsChange: Codable, Equatable, Sendable {
    var versions: Int64?
    var trash: Int64?
    /// Format 4: the kinds of `MergeKinds` turned on or off, by name.
    var merge: [String: Bool]?

    func applied(to settings: ContainerSettings) -> ContainerSettings {
        var settings = settings
        settings.retention.versions = versions ?? settings.retention.versions
        settings.retention.trash = trash ?? settings.retention.trash
        if let merge {
            var kinds = settings.merging
            for (name, on) in merge { kinds[name] = on }
            settings.merge = kinds
        }
        return settings
    }

    /// This change, then `later` on top of it.
    func merged(with later: SettingsChange) -> SettingsChange {
        let kinds = merge.map { $0.merging(later.merge ?? [:]) { _, new in new } } ?? later.merge
        return SettingsChange(versions: later.versions ?? versions, trash: later.trash ?? trash, merge: kinds)
    }
}
