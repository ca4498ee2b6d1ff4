import GRDB
import ItemModel
import MetadataStore

/// Format-5 splices (`BlockSplice`) in and out of journal records. Everything on a device
/// works on whole block lists: a reader expands a record's splices before anything else
/// reads it, and a writer cuts them only into the bytes it puts, both against the lists
/// the journal gave each file last (`JournalBlocks`), which every device keeps alike.
enum RecordSplices {
    /// `record` with every splice made a list again, and the operations refused: a splice
    /// in a record older than format 5, or whose base is not this device's list.
    static func expanded(_ record: JournalRecord, seq: UInt64, _ db: Database) throws -> (record: JournalRecord, refused: [String]) {
        guard record.ops.contains(where: \.hasSplice) else { return (record, []) }
        var record = record
        var refused: [String] = []
        var lists: [ItemID: [BlockReference]?] = [:]
        var kept: [JournalOperation] = []
        for operation in record.ops {
            guard case .upsert(var item) = operation, let splice = item.splice else {
                if case .upsert(let item) = operation { lists[item.id] = .some(item.kind == .file ? item.blocks : nil) }
                if case .delete(let id) = operation { lists[id] = .some(nil) }
                kept.append(operation)
                continue
            }
            guard record.format >= 5, item.blocks == nil, item.kind == .file else {
                let why = record.format < 5 ? "a splice in a record of format \(record.format)"
                    : item.kind != .file ? "a splice of a \(item.kind.rawValue)" : "a splice beside a list of blocks"
                refused.append("journal \(seq): \(item.name) refused: \(why)")
                continue
            }
            let base = try lists[item.id] ?? JournalBlocks.find(item.id, db)
            do throws(ItemModel.RecordError) {
                item.blocks = try splice.applied(to: base ?? [])
            } catch {
                refused.append("journal \(seq): \(item.name) refused: \(error.message)")
                continue
            }
            item.splice = nil
            lists[item.id] = item.blocks
            kept.append(.upsert(item))
        }
        record.ops = kept
        return (record, refused)
    }

    /// Notes the lists an applied or committed record (expanded) gives its files.
    static func note(_ operations: [JournalOperation], _ db: Database) throws {
        for operation in operations {
            switch operation {
            case .upsert(let item) where item.kind == .file: try JournalBlocks.set(item.id, item.blocks ?? [], db)
            case .upsert(let item): try JournalBlocks.remove(item.id, db)
            case .delete(let id): try JournalBlocks.remove(id, db)
            }
        }
    }

    /// The lists the journal gave the files `operations` upsert: what a writer's splices
    /// are cut from. Only a list that is also the item's committed one (the item is in the
    /// committed tree, with those blocks): a device that joined from a checkpoint since
    /// has that list, and none of an item deleted with its folder or of an upsert refused.
    static func bases(of operations: [JournalOperation], _ db: Database) throws -> [ItemID: [BlockReference]] {
        var bases: [ItemID: [BlockReference]] = [:]
        for case .upsert(let item) in operations where item.kind == .file && (item.blocks?.count ?? 0) > 1 {
            guard let blocks = try JournalBlocks.find(item.id, db), let committed = try BaseSnapshots.find(item.id, db),
                  committed.kind == .file, committed.blocks == blocks else { continue }
            bases[item.id] = blocks
        }
        return bases
    }

    /// `record` as it is put: each file upsert whose list keeps blocks of its base says so
    /// as a splice (format 5 on). An item upserted twice in one record is left whole.
    static func spliced(_ record: JournalRecord, bases: [ItemID: [BlockReference]]) -> JournalRecord {
        guard record.format >= 5, !bases.isEmpty else { return record }
        var record = record
        var seen: Set<ItemID> = []
        let repeated = Set(record.ops.map(\.itemID).filter { !seen.insert($0).inserted })
        record.ops = record.ops.map { operation in
            guard case .upsert(var item) = operation, !repeated.contains(item.id), let base = bases[item.id], let blocks = item.blocks,
                  blocks.count <= BlockSplice.maxBlocks, let splice = BlockSplice.make(from: base, to: blocks) else { return operation }
            item.splice = splice
            item.blocks = nil
            return .upsert(item)
        }
        return record
    }
}

extension JournalOperation {
    var hasSplice: Bool {
        if case .upsert(let item) = self { item.splice != nil } else { false }
    }
}
