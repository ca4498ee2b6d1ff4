import Foundation
import GRDB
import ItemModel
import MetadataStore

/// The container's settings as this device knows them: those in force (set by the last
/// record or checkpoint that carried them) and a change made here, until a record of
/// ours carries it (`ubiqfs retention`).
extension ContainerSettings {
    public static func current(_ db: Database) throws -> ContainerSettings {
        try decoded(ContainerSettings.self, SettingKey.containerSettings, db) ?? .standard
    }

    /// A change made here and not committed yet.
    static func pending(_ db: Database) throws -> SettingsChange? {
        try decoded(SettingsChange.self, SettingKey.pendingSettings, db)
    }

    /// What the next record of this device carries: the change on what is in force now.
    static func toCommit(_ db: Database) throws -> ContainerSettings? {
        try pending(db).map { try $0.applied(to: current(db)) }
    }

    /// In force from now on: a record or checkpoint carried them. A change made here that
    /// they carry is done.
    func makeCurrent(_ db: Database) throws {
        try MetadataStore.setSetting(SettingKey.containerSettings, try Self.encoded(self), db)
        if let change = try Self.pending(db), change.applied(to: self) == self {
            try MetadataStore.removeSetting(SettingKey.pendingSettings, db)
        }
    }

    /// Adds `change` to what is to be committed with the next record of this device.
    static func makePending(_ change: SettingsChange, _ db: Database) throws {
        let merged = try pending(db).map { $0.merged(with: change) } ?? change
        try MetadataStore.setSetting(SettingKey.pendingSettings, try encoded(merged), db)
    }

    private static func decoded<T: Decodable>(_ type: T.Type = ContainerSettings.self, _ key: String, _ db: Database) throws -> T? {
        guard let text = try MetadataStore.setting(key, db) else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    private static func encoded(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }
}
