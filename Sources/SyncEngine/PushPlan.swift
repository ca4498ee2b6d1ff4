import GRDB
import ItemModel
import MetadataStore

/// The journal operations for a set of dirty rows, in an order every device can apply:
/// deletes of files first (so a new item may take a deleted one's name), then upserts
/// with parents before children, then deletes of folders, deepest first (so whatever
/// moved out of them moved first).
struct PushPlan: Sendable {
    enum Change: Sendable {
        case upsert(ItemSnapshot)
        case delete(ItemID)
    }

    struct Entry: Sendable {
        var ino: Int64
        var change: Change
        var changeGen: Int64
        var upload: ContentUpload?

        var itemID: ItemID {
            switch change {
            case .upsert(let item): item.id
            case .delete(let id): id
            }
        }
    }

    var entries: [Entry] = []
    /// Rows whose change needs no operation (created and deleted before any commit).
    var settled: [Int64] = []

    var operations: [JournalOperation] {
        entries.map { entry in
            switch entry.change {
            case .upsert(let item): .upsert(item)
            case .delete(let id): .delete(id)
            }
        }
    }

    static func make(rows: [ItemRow], uploads: [Int64: ContentUpload], limit: Int, _ db: Database) throws -> PushPlan {
        var plan = PushPlan()
        var ids: [Int64: (id: ItemID, parent: Int64?, deleted: Bool)] = [:]
        func node(_ ino: Int64) throws -> (id: ItemID, parent: Int64?, deleted: Bool)? {
            if ino == ItemRow.rootIno { return (.root, nil, false) }
            if let known = ids[ino] { return known }
            guard let row = try ItemRow.find(ino: ino, db) else { return nil }
            let value = (row.itemID, row.parent, row.deleted)
            ids[ino] = value
            return value
        }
        func depth(_ ino: Int64) throws -> Int {
            var depth = 0
            var current: Int64? = ino
            while let value = current, value != ItemRow.rootIno, depth < 10_000 {
                current = try node(value)?.parent
                depth += 1
            }
            return depth
        }

        var fileDeletes: [(Int, Entry)] = []
        var upserts: [(Int, Entry)] = []
        var folderDeletes: [(Int, Entry)] = []
        for row in rows {
            let ino = row.inode
            if row.deleted {
                if try BaseSnapshots.find(row.itemID, db) != nil {
                    let entry = Entry(ino: ino, change: .delete(row.itemID), changeGen: row.changeGen, upload: nil)
                    if row.itemKind == .directory {
                        folderDeletes.append((try depth(ino), entry))
                    } else {
                        fileDeletes.append((0, entry))
                    }
                } else {
                    plan.settled.append(ino)
                }
                continue
            }
            guard let parentIno = row.parent, let parent = try node(parentIno), !parent.deleted else { continue }
            let xattrs = try StoredXattrs.all(of: ino, db)
            var item = ItemSnapshot(
                id: row.itemID, parent: parent.id, name: row.itemName, kind: row.itemKind, mode: UInt32(row.mode),
                mtime: row.mtime, size: row.size, blocks: nil, target: row.symlinkTarget,
                xattrs: xattrs.isEmpty ? nil : xattrs,
                rdev: row.itemKind.isDevice ? UInt64(bitPattern: row.rdev ?? 0) : nil
            )
            let upload = uploads[ino]
            switch row.itemKind {
            case .file:
                if let upload {
                    item.blocks = upload.blocks
                    item.size = upload.size
                    item.mtime = upload.mtime
                } else if row.dirtyFlags.contains(.content) {
                    continue
                } else {
                    item.blocks = row.blockList
                }
            case .directory:
                item.size = 0
            case .symlink:
                item.size = Int64(row.symlinkTarget?.bytes.count ?? 0)
            case .fifo, .socket, .characterDevice, .blockDevice:
                item.size = 0
            }
            upserts.append((try depth(ino), Entry(ino: ino, change: .upsert(item), changeGen: row.changeGen, upload: upload)))
        }
        upserts.sort { $0.0 < $1.0 }
        folderDeletes.sort { $0.0 > $1.0 }
        let ordered = fileDeletes.map(\.1) + upserts.map(\.1) + folderDeletes.map(\.1)
        plan.entries = Array(ordered.prefix(limit))
        return plan
    }
}
