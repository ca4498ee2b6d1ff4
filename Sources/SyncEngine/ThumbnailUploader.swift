import ContainerStore
import Foundation
import ItemModel

/// Stores pictures made here (`MadeThumbnails`) as content is stored: each PNG a blob,
/// inline when tiny, otherwise packed with the others of the same push (one `PUT` for
/// many pictures; sealed alone in an encrypted container).
struct ThumbnailUploader: Sendable {
    let calls: SyncCalls
    let gate: TransferGate

    /// Each item's pictures as references, sizes ascending.
    func upload(_ made: [ItemID: [Int: [UInt8]]]) async throws(SyncError) -> [ItemID: [Thumbnail]] {
        var result: [ItemID: [Thumbnail]] = [:]
        var pack = ItemID.random().rawValue
        var bytes: [UInt8] = []
        for (id, pictures) in made.sorted(by: { $0.key < $1.key }) {
            for (size, png) in pictures.sorted(by: { $0.key < $1.key }) {
                if bytes.count + png.count > PackUploader.packLimit && !bytes.isEmpty {
                    try await put(bytes, pack: pack)
                    (pack, bytes) = (ItemID.random().rawValue, [])
                }
                let block = try reference(png, pack: pack, offset: Int64(bytes.count), into: &bytes)
                result[id, default: []].append(Thumbnail(size: size, blocks: [block]))
            }
        }
        if !bytes.isEmpty { try await put(bytes, pack: pack) }
        return result
    }

    private func reference(_ png: [UInt8], pack: String, offset: Int64, into bytes: inout [UInt8]) throws(SyncError) -> BlockReference {
        let codec = calls.codec
        let hash = codec.name(of: png)
        let length = Int64(png.count)
        if png.count <= BlockReference.inlineLimit { return BlockReference(hash: hash, length: length, inline: Data(png)) }
        let stored = try codec.packed(png, name: hash)
        bytes += stored
        return BlockReference(hash: hash, length: length, pack: pack, offset: offset, stored: stored.count == png.count ? nil : Int64(stored.count))
    }

    private func put(_ bytes: [UInt8], pack: String) async throws(SyncError) {
        try await gate.run(bytes: Int64(bytes.count)) { () throws(SyncError) in
            try await calls.store("cannot upload a pack of thumbnails") { store throws(StoreError) in
                try await store.put(ContainerLayout.packKey(pack), bytes)
            }
        }
    }
}
