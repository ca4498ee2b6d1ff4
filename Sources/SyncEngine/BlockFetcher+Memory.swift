import ContainerStore
import ItemModel
import MetadataStore

/// Small blobs fetched into memory rather than a cache file (thumbnails).
extension BlockFetcher {
    /// The blob's bytes, checked against its name as a content block is; a blob that a
    /// collector moved out of its pack is fetched from its new place.
    func bytes(of block: BlockReference, of what: String) async throws(SyncError) -> [UInt8] {
        let codec = calls.codec
        if let inline = block.inline { return try codec.verified(Array(inline), of: block, what: what) }
        do {
            return try await bytes(at: block, block, of: what)
        } catch where error.code == .notFound && block.pack != nil {
            let key = ContainerLayout.location(of: block).key
            let moved = try await calls.read("cannot look up \(what)") { db in
                try BlobRelocations.place(of: block.hash, length: block.length, besides: key, db)
            }
            guard let moved else { throw error }
            return try await bytes(at: moved, block, of: what)
        }
    }

    private func bytes(at place: BlockReference, _ block: BlockReference, of what: String) async throws(SyncError) -> [UInt8] {
        let (key, range) = ContainerLayout.location(of: place)
        let codec = calls.codec
        return try await gate.run(bytes: block.length) { () throws(SyncError) -> [UInt8] in
            let fetched = try await calls.store("cannot download \(what)") { store throws(StoreError) in try await store.get(key, range: range) }
            return try codec.verified(fetched, of: block, what: what)
        }
    }
}
