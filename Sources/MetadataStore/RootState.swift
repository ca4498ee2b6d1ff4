import Foundation
import GRDB
import Inodes
import ItemModel

/// The root's own changes (mode, mtime, xattrs), which go in a record's `root` field: the
/// root has no upsert. They are pending while the root row's `changeGen` differs from the
/// one last committed (the root never has dirty flags, so no item machinery picks it up),
/// and the last committed attributes are the base a remote change is merged against.
public enum RootState {
    static let committedGenKey = "rootCommittedGen"
    static let baseKey = "rootBase"

    /// What the next record of this device carries, if the root changed here since.
    public static func pending(_ db: Database) throws -> (attributes: RootAttributes, changeGen: Int64)? {
        guard let row = try ItemRow.find(ino: .root, db), try isPending(row, db) else { return nil }
        return (try attributes(of: row, db), row.changeGen)
    }

    /// The attributes committed last (by any device), if a record ever carried them.
    public static func base(_ db: Database) throws -> RootAttributes? {
        guard let json = try MetadataStore.setting(baseKey, db) else { return nil }
        return try JSONDecoder().decode(RootAttributes.self, from: Data(json.utf8))
    }

    /// Our record carrying `attributes`, made from the root as of `changeGen`, committed.
    public static func committed(_ attributes: RootAttributes, changeGen: Int64, _ db: Database) throws {
        try setBase(attributes, db)
        try MetadataStore.setSetting(committedGenKey, String(changeGen), db)
    }

    /// Another device's committed attributes: taken where the root has not changed here
    /// since the base, field by field, as a folder's metadata is merged. Returns whether
    /// what this device shows changed.
    public static func take(_ remote: RootAttributes, _ db: Database) throws -> Bool {
        guard var row = try ItemRow.find(ino: .root, db) else { return false }
        let local = try attributes(of: row, db)
        var merged = remote
        if try isPending(row, db) {
            let base = try base(db)
            if local.mode != base?.mode { merged.mode = local.mode }
            if local.mtime != base?.mtime { merged.mtime = local.mtime }
            if local.xattrs != base?.xattrs { merged.xattrs = local.xattrs }
        }
        try setBase(remote, db)
        guard merged != local else { return false }
        row.mode = (row.mode & ~0o7777) | Int64(merged.mode)
        row.mtime = merged.mtime
        try row.update(db)
        try StoredXattrs.replace(.root, with: merged.xattrs ?? [:], db)
        return true
    }

    static func attributes(of root: ItemRow, _ db: Database) throws -> RootAttributes {
        RootAttributes(mode: UInt32(root.mode & 0o7777), mtime: root.mtime, xattrs: try StoredXattrs.all(of: .root, db))
    }

    /// Changed here since the generation last committed.
    static func isPending(_ root: ItemRow, _ db: Database) throws -> Bool {
        root.changeGen != (try MetadataStore.setting(committedGenKey, db).flatMap { Int64($0) } ?? 0)
    }

    static func setBase(_ attributes: RootAttributes, _ db: Database) throws {
        let json = String(decoding: try JSONEncoder().encode(attributes), as: UTF8.self)
        try MetadataStore.setSetting(baseKey, json, db)
    }
}
