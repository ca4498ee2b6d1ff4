import GRDB
import ItemModel
import MetadataStore

/// Format-5 splices (`BlockSplice`) in and out of journal records. Everything on a device
/// works on whole block lists: a reader expands a record's splices before anything else
/// reads it, and a writer cuts them only into the bytes it puts, both against the lists
/// the journal gave each file last (`JournalBlocks`).
enum RecordSplices {
    /// A writer sends a file's whole list after this many splices in a row, so a device
    /// whose list went astray (a record damaged in the store, a splice it refused, an
    /// upsert refused here but not where a checkpoint came from) has the journal's again.
    static let wholeEvery = 32

    /// A record with its splices made lists again.
    struct Expansion {
        var record: JournalRecord
        /// Why operations were left out: a splice in a record older than format 5, of no
        /// file, beside a list, or whose base is not this device's list.
        var refused: [String] = []
        /// The files whose list a splice made, and those whose splice was refused.
        var spliced: Set<ItemID> = []
        var forgotten: Set<ItemID> = []
    }

    static func expanded(_ record: JournalRecord, seq: UInt64, _ db: Database) throws -> Expansion {
        var expansion = Expansion(record: record)
        guard record.ops.contains(where: \.hasSplice) else { return expansion }
        var lists: [ItemID: [BlockReference]?] = [:]
        var kept: [JournalOperation] = []
        for operation in record.ops {
            guard case .upsert(var item) = operation, let splice = item.splice else {
                expansion.forgotten.remove(operation.itemID)
                if case .upsert(let item) = operation { lists[item.id] = .some(item.kind == .file ? item.blocks : nil) }
                if case .delete(let id) = operation { lists[id] = .some(nil) }
                kept.append(operation)
                continue
            }
            let base = try lists[item.id] ?? JournalBlocks.find(item.id, db)
            do throws(ItemModel.RecordError) {
                item.blocks = try expand(splice, of: item, base: base, format: record.format)
            } catch {
                expansion.refused.append("journal \(seq): \(item.name) refused: \(error.message)")
                expansion.forgotten.insert(item.id)
                lists[item.id] = .some(nil)
                continue
            }
            item.splice = nil
            lists[item.id] = item.blocks
            expansion.spliced.insert(item.id)
            kept.append(.upsert(item))
        }
        expansion.record.ops = kept
        return expansion
    }

    private static func expand(_ splice: BlockSplice, of item: ItemSnapshot, base: [BlockReference]?, format: Int) throws(ItemModel.RecordError) -> [BlockReference] {
        func refuse(_ why: String) -> ItemModel.RecordError { ItemModel.RecordError(code: .invalid, message: why) }
        guard format >= 5 else { throw refuse("a splice in a record of format \(format)") }
        guard item.kind == .file else { throw refuse("a splice of a \(item.kind.rawValue)") }
        guard item.blocks == nil else { throw refuse("a splice beside a list of blocks") }
        guard let base else { throw refuse("a splice of a file whose list this device does not have") }
        return try splice.applied(to: base)
    }

    /// Notes the lists an applied or committed record (expanded) gives its files, those
    /// in `spliced` one splice further from a whole list, and forgets `forgotten`'s.
    static func note(_ operations: [JournalOperation], spliced: Set<ItemID>, forgotten: Set<ItemID> = [], _ db: Database) throws {
        for operation in operations {
            switch operation {
            case .upsert(let item) where item.kind == .file && item.splice != nil:
                continue
            case .upsert(let item) where item.kind == .file:
                let count = spliced.contains(item.id) ? (try JournalBlocks.entry(item.id, db)?.spliced ?? 0) + 1 : 0
                try JournalBlocks.set(item.id, item.blocks ?? [], spliced: count, db)
            case .upsert(let item): try JournalBlocks.remove(item.id, db)
            case .delete(let id): try JournalBlocks.remove(id, db)
            }
        }
        for id in forgotten { try JournalBlocks.remove(id, db) }
    }

    /// The lists the journal gave the files `operations` upsert: what a writer's splices
    /// are cut from. Only a list that is also the item's committed one (the item is in the
    /// committed tree, with those blocks), and fewer than `wholeEvery` splices from a
    /// whole list.
    static func bases(of operations: [JournalOperation], _ db: Database) throws -> [ItemID: [BlockReference]] {
        var bases: [ItemID: [BlockReference]] = [:]
        for case .upsert(let item) in operations where item.kind == .file && (item.blocks?.count ?? 0) > 1 {
            guard let (blocks, spliced) = try JournalBlocks.entry(item.id, db), spliced < wholeEvery,
                  let committed = try BaseSnapshots.find(item.id, db), committed.kind == .file, committed.blocks == blocks else { continue }
            bases[item.id] = blocks
        }
        return bases
    }

    /// `record` as it is put: each file upsert whose list keeps blocks of its base says so
    /// as a splice (format 5 on). An item upserted twice in one record is left whole, and
    /// so is a list longer than a splice may make.
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

    /// The files `record` says as splices, put against `bases`.
    static func splicedIDs(_ record: JournalRecord, bases: [ItemID: [BlockReference]]) -> Set<ItemID> {
        Set(spliced(record, bases: bases).ops.compactMap { $0.hasSplice ? $0.itemID : nil })
    }
}

extension JournalOperation {
    var hasSplice: Bool {
        if case .upsert(let item) = self { item.splice != nil } else { false }
    }
}
