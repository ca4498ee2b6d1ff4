import ContainerStore
import Inodes
import ItemModel
import MetadataStore

/// Thumbnails made here go out with the next record: each as an upsert of its item's
/// committed snapshot with the pictures added (the same content: no version), or with the
/// item's own upsert when the record takes it anyway. Other devices' pictures come in with
/// their items; this device's thumbnail service hears of it (`ThumbnailEvents`).
extension SyncEngine {
    /// At most this many items' pictures go with one record.
    static let picturesPerRecord = 200

    /// Whether the container carries thumbnails (format 3 and later).
    public nonisolated var carriesThumbnails: Bool { format.current >= 3 }

    /// The pictures made here still to be committed, uploaded. Pictures of content that is
    /// no longer the committed one, of items gone, or of sizes the item has already (another
    /// device made them first) are dropped; an item whose change is held for a writer here
    /// waits (its committed snapshot is not the last one).
    /// By item: the content they show and the item's whole list of thumbnails with them.
    func picturesToCommit() async throws(SyncError) -> [ItemID: PushPlan.Pictures] {
        guard carriesThumbnails, !readOnly else { return [:] }
        let held = Set(self.held.keys)
        let (wanted, stale) = try await calls.read("cannot read the thumbnails made here") { db in
            var wanted: [ItemID: (content: [BlockReference], base: [Thumbnail], pictures: [Int: [UInt8]])] = [:]
            var stale: [ItemID] = []
            for id in try MadeThumbnails.items(db) where !held.contains(id) {
                guard wanted.count < Self.picturesPerRecord else { break }
                guard let row = try ItemRow.find(id: id, db), !row.deleted, let base = try BaseSnapshots.find(id, db), base.kind == .file else {
                    stale.append(id)
                    continue
                }
                let content = base.blocks ?? []
                var pictures = try MadeThumbnails.pictures(id, showing: content, db)
                for size in (base.thumbnails ?? []).map(\.size) { pictures[size] = nil }
                if pictures.isEmpty { stale.append(id) } else { wanted[id] = (content, base.thumbnails ?? [], pictures) }
            }
            return (wanted, stale)
        }
        if !stale.isEmpty {
            _ = try await calls.write("cannot drop thumbnails of old content") { db in
                for id in stale { try MadeThumbnails.remove(id, db) }
            }
        }
        guard !wanted.isEmpty else { return [:] }
        let uploaded = try await ThumbnailUploader(calls: calls, gate: gates.upload).upload(wanted.mapValues(\.pictures))
        return uploaded.reduce(into: [:]) { result, entry in
            guard let made = wanted[entry.key] else { return }
            let thumbnails = (made.base + entry.value).sorted { $0.size < $1.size }
            result[entry.key] = (content: made.content, thumbnails: thumbnails)
        }
    }

    /// The bytes of a thumbnail another device committed, checked against its names.
    public nonisolated func bytes(of thumbnail: Thumbnail, of what: String) async throws(SyncError) -> [UInt8] {
        var bytes: [UInt8] = []
        for block in thumbnail.blocks {
            bytes += try await downloads.fetcher.bytes(of: block, of: what)
        }
        return bytes
    }

    /// Pictures of an item's committed content were made here: the next push takes them.
    public nonisolated func thumbnailsMade() {
        localChange()
    }
}
