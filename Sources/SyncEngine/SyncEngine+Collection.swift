import ContainerStore
import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// The writer's side of collection (format 2, rule W of docs/CONTAINER-FORMAT.md): a
/// record names no object that a collector has condemned, and no object this push did not
/// write and the committed tree does not name unless it was seen to exist after the last
/// listing of `gc/`. Entries that would are left out of the record: their content is
/// uploaded again under fresh keys (downloaded first if it is not here).
extension SyncEngine {
    /// Leaves out of `plan` the entries that would name an object at risk, and starts what
    /// brings them back (true: some local content is to be uploaded again), with the
    /// generation of the listing it checked against (`CondemnedObjects.stillClear`).
    func withoutObjectsAtRisk(_ plan: PushPlan) async throws(SyncError) -> (plan: PushPlan, reuploading: Bool, generation: Int) {
        guard format.current >= 2 else { return (plan, false, 0) }
        let (condemned, generation) = try await self.condemned.listing(calls)
        let plan = Self.withoutPicturesAtRisk(plan, condemned)
        var risky: Set<Inode> = []
        var reused: [(ino: Inode, id: ItemID, keys: [String])] = []
        var indexed: [(ino: Inode, keys: Set<String>)] = []
        for entry in plan.entries {
            guard case .upsert(let item) = entry.change, let blocks = item.blocks, !blocks.isEmpty else { continue }
            let keys = blocks.compactMap(ContainerLayout.objectKey(of:))
            if keys.contains(where: condemned.contains) {
                risky.insert(entry.ino)
            } else if let upload = entry.upload {
                if !upload.reused.isEmpty { indexed.append((entry.ino, upload.reused)) }
            } else if !keys.isEmpty {
                reused.append((entry.ino, item.id, keys))
            }
        }
        risky.formUnion(try await missing(reused))
        risky.formUnion(try await missingIndexed(indexed))
        guard !risky.isEmpty else { return (plan, false, generation) }
        let dependents = try await dependents(of: risky, in: plan)
        var kept = plan
        kept.entries.removeAll { risky.contains($0.ino) || dependents.contains($0.ino) }
        return (kept, try await reupload(risky), generation)
    }

    /// `plan` without the pictures made here that name a condemned object (W2: stored at
    /// the start of a push, a pack of them may be condemned while a large upload goes on):
    /// they stay made, to be stored anew by a later push; the items' changes go now.
    nonisolated static func withoutPicturesAtRisk(_ plan: PushPlan, _ condemned: Set<String>) -> PushPlan {
        var plan = plan
        for index in plan.entries.indices where plan.pictured.contains(plan.entries[index].itemID) {
            guard case .upsert(var item) = plan.entries[index].change, let thumbnails = item.thumbnails else { continue }
            let safe = thumbnails.filter { !$0.blocks.compactMap(ContainerLayout.objectKey(of:)).contains(where: condemned.contains) }
            guard safe.count != thumbnails.count else { continue }
            item.thumbnails = safe.isEmpty ? nil : safe
            plan.entries[index].change = .upsert(item)
            plan.pictured.remove(item.id)
        }
        return plan
    }

    /// The entries that need a left-out one in the same record (`PushPlan.withDependencies`:
    /// one that takes its name, a folder's delete that needs it moved out): they wait too.
    private func dependents(of risky: Set<Inode>, in plan: PushPlan) async throws(SyncError) -> Set<Inode> {
        let others = plan.entries.map(\.ino).filter { !risky.contains($0) }
        return try await calls.read("cannot plan the push") { db in
            var waiting: Set<Inode> = []
            for ino in others {
                guard let row = try ItemRow.find(ino: ino, db) else { continue }
                let needed = try PushPlan.withDependencies([row], db).ordered.map(\.inode)
                if needed.contains(where: risky.contains) { waiting.insert(ino) }
            }
            return waiting
        }
    }

    /// Of entries naming objects this push did not write, those whose objects the item's
    /// committed snapshot does not name and the store does not have.
    private func missing(_ reused: [(ino: Inode, id: ItemID, keys: [String])]) async throws(SyncError) -> Set<Inode> {
        guard !reused.isEmpty else { return [] }
        let committed = try await calls.read("cannot read committed items") { db in
            try reused.map { entry in
                let blocks = try BaseSnapshots.find(entry.id, db)?.blocks ?? []
                return Set(blocks.compactMap(ContainerLayout.objectKey(of:)))
            }
        }
        var checked: [String: Bool] = [:]
        var missing: Set<Inode> = []
        for (entry, known) in zip(reused, committed) where try await anyMissing(entry.keys.filter { !known.contains($0) }, checked: &checked) {
            missing.insert(entry.ino)
        }
        return missing
    }

    /// Of uploads naming another file's objects (`ChunkIndex`), those whose objects the
    /// store does not have: the index forgets them, so the upload made again sends the bytes.
    private func missingIndexed(_ uploads: [(ino: Inode, keys: Set<String>)]) async throws(SyncError) -> Set<Inode> {
        var checked: [String: Bool] = [:]
        var missing: Set<Inode> = []
        for upload in uploads {
            // Every key asked about, not only up to the first missing: the index forgets them all at once.
            for key in upload.keys where try await anyMissing([key], checked: &checked) {
                missing.insert(upload.ino)
            }
        }
        let gone = checked.filter { !$0.value }.map(\.key)
        if !gone.isEmpty {
            logger.warning("\(gone.count) objects the chunk index named are gone from the store; their blocks are uploaded again")
            _ = try await calls.write("cannot update the chunk index") { db in try ChunkIndex.forget(objects: gone, db) }
        }
        return missing
    }

    /// Whether the store lacks any of `keys` now (W3); `checked` keeps its answers, so a
    /// key named twice in one push is asked about once.
    func anyMissing(_ keys: some Sequence<String>, checked: inout [String: Bool]) async throws(SyncError) -> Bool {
        for key in keys {
            if checked[key] == nil {
                checked[key] = try await calls.store("cannot check \(key)") { store throws(StoreError) in try await store.exists(key) }
            }
            if checked[key] == false { return true }
        }
        return false
    }

    /// Content here is uploaded again (the uploader avoids condemned keys); content not
    /// here is fetched first, while its objects still exist. True if any is here.
    private func reupload(_ inos: Set<Inode>) async throws(SyncError) -> Bool {
        let rows = try await calls.read("cannot read items") { db in try inos.compactMap { try ItemRow.find(ino: $0, db) } }
        let local = rows.filter { $0.contentState == .local }.map(\.inode)
        _ = try await calls.write("cannot mark content for upload") { db in
            for ino in local {
                guard var row = try ItemRow.find(ino: ino, db) else { continue }
                row.markChanged(.content, now: Timestamp.now())
                try row.update(db)
            }
        }
        let absent = rows.filter { $0.contentState != .local }
        for row in absent {
            let message = "\(row.itemName): its content in the store is being collected; it is downloaded and uploaded again before its change is pushed"
            logger.warning("\(message)")
            remember(message, in: &errors)
        }
        downloads.prefetch(absent.map(\.inode))
        return !local.isEmpty
    }
}
