import ContainerStore
import Foundation
import ItemModel

/// The copying half of repacking (docs/CONTAINER-FORMAT.md, "Repacking"): finds the packs
/// of which less than a share is named, and copies their named blobs into new packs (or
/// points them at a place that already holds the same bytes). Nothing here commits: the
/// moves it returns become a record (`SyncEngine+Repack`), and until then the new packs
/// are garbage like any unnamed object.
struct Repacker {
    let calls: SyncCalls
    /// A pack is repacked when less than this share of its bytes is named.
    let below: Double
    let packLimit = PackUploader.packLimit

    /// A pack to empty, and the blobs named in it.
    struct Source {
        var pack: String
        var blobs: [BlockReference]
    }

    struct Copy {
        var moves: [BlobMove] = []
        /// The packs this run wrote.
        var written: [String] = []
        var bytesCopied: Int64 = 0
        /// Named blobs whose bytes did not match their name: left where they are.
        var unreadable = 0
    }

    /// The packs that are mostly garbage but not wholly (those go whole by the sweep).
    func sources(_ mark: Collector.Mark, stored: [StoredObject]) -> [Source] {
        stored.compactMap { object -> Source? in
            guard object.key.hasPrefix(ContainerLayout.packPrefix), object.size > 0 else { return nil }
            let pack = String(object.key.dropFirst(ContainerLayout.packPrefix.count))
            guard let blobs = mark.packed[pack], !blobs.isEmpty else { return nil }
            let named = blobs.reduce(Int64(0)) { $0 + $1.storedLength }
            return Double(named) < below * Double(object.size) ? Source(pack: pack, blobs: blobs) : nil
        }.sorted { $0.pack < $1.pack }
    }

    /// Moves every named blob of `sources`: to a place of the same bytes in a pack that
    /// stays, or to a new pack (one `GET` of each source, one `PUT` of each new pack).
    func copy(_ sources: [Source], _ mark: Collector.Mark) async throws(SyncError) -> Copy {
        let leaving = Set(sources.map(\.pack))
        var places: [String: BlockReference] = [:]
        for (pack, blobs) in mark.packed where !leaving.contains(pack) {
            for blob in blobs { places[blob.hash] = places[blob.hash] ?? blob }
        }
        var copy = Copy()
        var filling = NewPack()
        for source in sources {
            let bytes: [UInt8]
            do {
                bytes = try await calls.store("cannot read \(source.pack) to repack it") { store throws(StoreError) in
                    try await store.get(ContainerLayout.packKey(source.pack))
                }
            } catch where error.code == .notFound {
                continue
            }
            var moved: Set<String> = []
            for blob in source.blobs where moved.insert(blob.hash).inserted {
                if let place = places[blob.hash], place.length == blob.length, let pack = place.pack, let offset = place.offset {
                    let move = BlobMove(hash: blob.hash, length: blob.length, from: source.pack, pack: pack, offset: offset)
                    if pack == filling.id { filling.moves.append(move) } else { copy.moves.append(move) }
                    continue
                }
                guard let slice = await verified(blob, in: bytes) else {
                    copy.unreadable += 1
                    continue
                }
                if !filling.bytes.isEmpty && filling.bytes.count + slice.count > packLimit {
                    try await put(filling, into: &copy)
                    filling = NewPack()
                }
                let place = BlockReference(hash: blob.hash, length: blob.length, pack: filling.id, offset: Int64(filling.bytes.count), stored: blob.stored)
                filling.bytes += slice
                filling.moves.append(BlobMove(hash: blob.hash, length: blob.length, from: source.pack, pack: filling.id, offset: place.offset!))
                places[blob.hash] = place
            }
        }
        if !filling.bytes.isEmpty { try await put(filling, into: &copy) }
        return copy
    }

    private struct NewPack {
        let id = ItemID.random().rawValue
        var bytes: [UInt8] = []
        var moves: [BlobMove] = []
    }

    /// A move to a new pack counts once its pack is in the store.
    private func put(_ pack: NewPack, into copy: inout Copy) async throws(SyncError) {
        try await calls.store("cannot write a repacked pack") { store throws(StoreError) in
            try await store.put(ContainerLayout.packKey(pack.id), pack.bytes)
        }
        copy.moves += pack.moves
        copy.written.append(pack.id)
        copy.bytesCopied += Int64(pack.bytes.count)
    }

    /// The blob's stored bytes in its pack (sealed, in an encrypted container: copied as
    /// they are), if they open to what its name says.
    private func verified(_ blob: BlockReference, in bytes: [UInt8]) async -> [UInt8]? {
        guard let offset = blob.offset, offset >= 0, offset + blob.storedLength <= Int64(bytes.count) else { return nil }
        let slice = Array(bytes[Int(offset) ..< Int(offset + blob.storedLength)])
        let codec = calls.codec
        let good = await OffloadedWork.run { (try? codec.verified(slice, of: blob, what: "a repacked blob")) != nil }
        return good ? slice : nil
    }
}
