import Foundation
import GRDB
import ItemModel

/// Applies a collector's blob moves (`JournalRecord.relocate`) to every reference this
/// device keeps: the items' committed blocks, their base snapshots, the journal's lists
/// (`JournalBlocks`), the versions, the trash and the changes held for a writer. Only rows
/// whose stored JSON mentions a pack that is left are decoded, so a move costs a scan of
/// the tables, not a decode of them.
public enum BlobRelocations {
    /// Rewrites every reference the moves name; returns the held changes if any of them
    /// was rewritten (their new form, for the engine's list), else none.
    public static func apply(_ moves: [BlobMove], _ db: Database) throws -> [HeldChange] {
        let table = Dictionary(moves.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        func moved(_ blocks: [BlockReference]) -> [BlockReference]? {
            let result = blocks.relocated(by: table)
            return result.changed ? result.blocks : nil
        }
        var heldRewritten = 0
        for pack in Set(moves.map(\.from)).sorted() {
            _ = try rewrite("item", "blocks", mentioning: pack, db, moved)
            _ = try rewrite("base", "snapshot", mentioning: pack, db) { (item: ItemSnapshot) in relocated(item, table) }
            _ = try rewrite("version", "blocks", mentioning: pack, db, moved)
            _ = try rewrite("journal_blocks", "blocks", mentioning: pack, db, moved)
            _ = try rewrite("trash", "entry", mentioning: pack, db) { (entry: TrashEntry) in
                var entry = entry
                var changed = false
                for index in entry.items.indices {
                    guard let item = relocated(entry.items[index], table) else { continue }
                    entry.items[index] = item
                    changed = true
                }
                return changed ? entry : nil
            }
            heldRewritten += try rewrite("held", "operation", mentioning: pack, db) { (operation: JournalOperation) in
                guard case .upsert(let item) = operation, let moved = relocated(item, table) else { return nil }
                return .upsert(moved)
            }
        }
        try ChunkIndex.relocate(moves, db)
        return heldRewritten > 0 ? try HeldChanges.all(db) : []
    }

    /// Another place this device knows for blob `hash` (a packed blob's pack gone: a fill
    /// that began before a move was applied here retries there), or nil.
    public static func place(of hash: String, length: Int64, besides key: String, _ db: Database) throws -> BlockReference? {
        let needle = Data(hash.utf8)
        func search<Value: Decodable>(_ table: String, _ column: String, _ blocks: (Value) -> [BlockReference]) throws -> BlockReference? {
            let rows = try Data.fetchCursor(db, sql: "SELECT \(column) FROM \(table) WHERE instr(\(column), ?) > 0", arguments: [needle])
            while let data = try rows.next() {
                guard let value = try? JSONDecoder().decode(Value.self, from: data) else { continue }
                if let found = blocks(value).first(where: { $0.hash == hash && $0.length == length && ContainerLayout.location(of: $0).key != key }) {
                    return found
                }
            }
            return nil
        }
        return try search("item", "blocks") { (blocks: [BlockReference]) in blocks }
            ?? search("base", "snapshot") { (item: ItemSnapshot) in item.blocks ?? [] }
            ?? search("version", "blocks") { (blocks: [BlockReference]) in blocks }
    }

    private static func relocated(_ item: ItemSnapshot, _ table: [String: BlobMove]) -> ItemSnapshot? {
        var item = item
        var changed = false
        if let blocks = item.blocks {
            let moved = blocks.relocated(by: table)
            item.blocks = moved.blocks
            changed = moved.changed
        }
        for index in (item.thumbnails ?? []).indices {
            let moved = item.thumbnails![index].blocks.relocated(by: table)
            item.thumbnails![index].blocks = moved.blocks
            changed = changed || moved.changed
        }
        return changed ? item : nil
    }

    /// Decodes each row of `table` whose `column` mentions `pack`, and writes back what
    /// `change` returns for it (nil: untouched). Returns the rows written.
    private static func rewrite<Value: Codable>(
        _ table: String, _ column: String, mentioning pack: String, _ db: Database, _ change: (Value) -> Value?
    ) throws -> Int {
        let rows = try Row.fetchAll(db, sql: "SELECT rowid AS rid, \(column) FROM \(table) WHERE instr(\(column), ?) > 0", arguments: [Data(pack.utf8)])
        var written = 0
        for row in rows {
            let data: Data = row[column]
            guard let value = try? JSONDecoder().decode(Value.self, from: data), let changed = change(value) else { continue }
            try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE rowid = ?", arguments: [try JSONEncoder().encode(changed), row["rid"] as Int64])
            written += 1
        }
        return written
    }
}
