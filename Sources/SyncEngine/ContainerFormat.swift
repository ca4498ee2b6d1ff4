import GRDB
import MetadataStore
import Synchronization

/// The container format this device writes and collects by: `container.json`'s, raised
/// when a record or checkpoint of a newer format this device reads is applied (the
/// container was upgraded in place by another device). Shared by the engine and the
/// uploader, so a push that follows the upgrade writes the new format and follows its
/// rules (packs, condemned objects).
final class ContainerFormat: Sendable {
    private let value: Mutex<Int>

    init(_ format: Int) { value = Mutex(format) }

    var current: Int { value.withLock { $0 } }

    /// Notes in the state database that record `seq`, of `format`, is applied or
    /// committed: the first of format 2 is where collection may begin (every device that
    /// commits after it writes format 2 and follows its rules), and the newest format seen
    /// is what this device writes from its next start, whatever `container.json` it finds.
    static func noteRecord(_ format: Int, seq: UInt64, _ db: Database) throws {
        if format >= 2, try MetadataStore.setting(SettingKey.formatTwoFrom, db) == nil {
            try MetadataStore.setSetting(SettingKey.formatTwoFrom, String(seq), db)
        }
        if format > (try seen(db)) { try MetadataStore.setSetting(SettingKey.formatSeen, String(format), db) }
    }

    /// The newest format of a record this device applied or committed (1 if none).
    static func seen(_ db: Database) throws -> Int {
        if let value = try MetadataStore.setting(SettingKey.formatSeen, db).flatMap(Int.init) { return value }
        return try MetadataStore.setting(SettingKey.formatTwoFrom, db) == nil ? 1 : 2
    }

    /// Whether `format` is newer than the current one (which it then becomes).
    func raise(to format: Int) -> Bool {
        value.withLock { current in
            guard format > current else { return false }
            current = format
            return true
        }
    }
}
