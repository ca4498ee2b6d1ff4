import Foundation
import GRDB
import ItemModel
import MetadataStore

/// The container's settings as this device knows them: those in force (set by the last
/// record or checkpoint that carried them) and a change made here, until a record of
/// ours carries it (`ubiqfs retention`).
extension ContainerSettings {
    public static func current(_ db: Database) throws -> ContainerSettings {
        try decoded(SettingKey.containerSettings, db) ?? .standard
    }

    /// A change made here and not committed yet.
    public static func pending(_ db: Database) throws -> ContainerSettings? {
        try decoded(SettingKey.pendingSettings, db)
    }

    /// In force from now on: a record or checkpoint carried them. A change made here that
    /// they carry is done.
    func makeCurrent(_ db: Database) throws {
        try MetadataStore.setSetting(SettingKey.containerSettings, try Self.encoded(self), db)
        if try Self.pending(db) == self { try MetadataStore.removeSetting(SettingKey.pendingSettings, db) }
    }

    /// To be committed with the next record of this device.
    func makePending(_ db: Database) throws {
        try MetadataStore.setSetting(SettingKey.pendingSettings, try Self.encoded(self), db)
    }

    private static func decoded(_ key: String, _ db: Database) throws -> ContainerSettings? {
        guard let text = try MetadataStore.setting(key, db) else { return nil }
        return try JSONDecoder().decode(ContainerSettings.self, from: Data(text.utf8))
    }

    private static func encoded(_ settings: ContainerSettings) throws -> String {
        String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
    }
}
