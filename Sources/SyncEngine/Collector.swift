import ContainerStore
import Foundation
import GRDB
import ItemModel
import MetadataStore

/// Deletes the objects of a format-2 container that nothing within retention names
/// (docs/CONTAINER-FORMAT.md, "Collection"): under the lease, it marks from this device's
/// committed tree, versions and trash as of `head`, writes the condemned list, waits the
/// grace period, rescues what records committed meanwhile name, and deletes the rest.
/// Killed at any point, it leaves objects that are not needed, never a missing one.
struct Collector {
    let calls: SyncCalls
    /// Swept lists stay this long, for writers whose push began before the sweep.
    static let sweptListLife: Int64 = 7 * 86400 * 1_000_000_000
    static let unsweptListLife: Int64 = 30 * 86400 * 1_000_000_000

    /// The objects everything this device knows names, by kind, with the bytes named in
    /// each (a pack counts each of its blobs once).
    struct Mark {
        var live: [String: Int64] = [:]
        var history: [String: Int64] = [:]
        var trash: [String: Int64] = [:]
        /// Each blob once: `key` and offset.
        var counted: Set<String> = []
        /// The blobs named in each pack (by pack id), each place once: what a repack moves.
        var packed: [String: [BlockReference]] = [:]

        func contains(_ key: String) -> Bool { live[key] != nil || history[key] != nil || trash[key] != nil }
    }

    /// `held`: operations applied later here (held for a writer); what they name is live.
    func mark(including held: [JournalOperation]) async throws(SyncError) -> Mark {
        try await calls.read("cannot read what the container names") { db in
            var mark = Mark()
            func add(_ blocks: [BlockReference], to kind: WritableKeyPath<Mark, [String: Int64]>) {
                for block in blocks {
                    guard let key = ContainerLayout.objectKey(of: block), mark.counted.insert("\(key)@\(block.offset ?? 0)").inserted else { continue }
                    if let pack = block.pack { mark.packed[pack, default: []].append(block) }
                    // An object is of the first kind that names it (live, then trash, then history).
                    let owner = [\Mark.live, \Mark.trash, \Mark.history].first { mark[keyPath: $0][key] != nil } ?? kind
                    mark[keyPath: owner][key, default: 0] += block.length
                }
            }
            for item in try BaseSnapshots.all(db) { add(item.namedBlocks, to: \.live) }
            for case .upsert(let item) in held { add(item.namedBlocks, to: \.live) }
            for entry in try TrashEntries.all(db) {
                for item in entry.items { add(item.namedBlocks, to: \.trash) }
            }
            for blocks in try FileVersions.allBlocks(db) + PendingMerges.allBlocks(db) { add(blocks, to: \.history) }
            return mark
        }
    }

    /// Every object of content in the store, with its size.
    func stored() async throws(SyncError) -> [StoredObject] {
        var objects: [StoredObject] = []
        for prefix in [ContainerLayout.blockPrefix, ContainerLayout.packPrefix] {
            objects += try await calls.store("cannot list \(prefix)") { store throws(StoreError) in try await store.listAllObjects(prefix: prefix) }
        }
        return objects
    }

    /// What of `objects` this device's mark does not name.
    func garbage(_ mark: Mark, stored objects: [StoredObject], report: inout CollectionReport) -> [StoredObject] {
        report.stored = objects.reduce(0) { $0 + max(0, $1.size) }
        let garbage = objects.filter { !mark.contains($0.key) }
        report.garbage = garbage.reduce(0) { $0 + max(0, $1.size) }
        return garbage
    }

    /// The objects named by records after `from` up to `to`: committed during the grace
    /// period, so kept whatever the mark said.
    func named(after from: UInt64, through to: UInt64) async throws(SyncError) -> Set<String> {
        var keys: Set<String> = []
        guard to > from else { return keys }
        for seq in (from + 1)...to {
            let key = ContainerLayout.journalKey(seq)
            let bytes = try await calls.store("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
            // An undecodable record names nothing readers apply; its raw text is searched
            // all the same, so a blob it might name is never deleted on its account.
            if let record = try? RecordCodec.decode(JournalRecord.self, from: bytes) {
                for case .upsert(let item) in record.ops {
                    keys.formUnion(item.namedBlocks.compactMap(ContainerLayout.objectKey(of:)))
                }
                for move in record.relocate ?? [] { keys.insert(ContainerLayout.packKey(move.pack)) }
            } else {
                keys.formUnion(Self.keysMentioned(in: bytes))
            }
        }
        return keys
    }

    /// Every 64-hex and 32-hex run in an unreadable record, as block and pack keys.
    static func keysMentioned(in bytes: [UInt8]) -> Set<String> {
        var keys: Set<String> = []
        var run: [UInt8] = []
        for byte in bytes + [0] {
            if (48...57).contains(byte) || (97...102).contains(byte) {
                run.append(byte)
                continue
            }
            let text = String(decoding: run, as: UTF8.self)
            if run.count == 64 { keys.insert(ContainerLayout.blockKey(text)) }
            if run.count == 32 { keys.insert(ContainerLayout.packKey(text)) }
            run = []
        }
        return keys
    }

    /// Deletes the condemned objects not rescued; counts what went.
    func sweep(_ condemned: [StoredObject], keeping rescued: Set<String>, report: inout CollectionReport) async throws(SyncError) {
        for object in condemned {
            if rescued.contains(object.key) {
                report.rescued += 1
                continue
            }
            try await calls.store("cannot delete \(object.key)") { store throws(StoreError) in try await store.delete(object.key) }
            report.deleted += 1
            report.deletedBytes += max(0, object.size)
        }
    }
}
