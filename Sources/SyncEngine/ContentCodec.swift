import ContainerCrypto
import ContainerStore
import ContentCache
import ItemModel

/// How content is named and stored in this container: SHA-256 names in the clear, or
/// keyed names and sealed packed blobs in an encrypted one (`ContainerCipher`). Objects
/// other than packs are sealed by the `SealedStore` under the engine; a packed blob is
/// sealed here, alone, so that a ranged `GET` reads it.
struct ContentCodec: Sendable {
    let cipher: ContainerCipher?

    init(store: any ContainerStore) {
        cipher = (store as? SealedStore)?.cipher
    }

    /// The name of a block of content: what records, dedup and verification use.
    func name(of bytes: [UInt8]) -> String {
        cipher?.name(of: bytes) ?? ContentHasher.sha256Hex(bytes)
    }

    /// A small file's bytes as they go into a pack.
    func packed(_ bytes: [UInt8], name: String) throws(SyncError) -> [UInt8] {
        guard let cipher else { return bytes }
        do { return try cipher.seal(blob: bytes, name: name) } catch {
            throw SyncError(code: .store, message: "cannot seal a small file for its pack", cause: error)
        }
    }

    /// A block's bytes as fetched (a packed blob opened in an encrypted container), if
    /// they are what its reference names; `what` names the content in errors.
    func verified(_ fetched: [UInt8], of block: BlockReference, what: String) throws(SyncError) -> [UInt8] {
        var bytes = fetched
        if let cipher, block.pack != nil {
            do { bytes = try cipher.open(blob: fetched, name: block.hash) } catch {
                throw SyncError(code: .corrupt, message: "block \(block.hash) of \(what): \(error.message); not served", cause: error)
            }
        }
        guard Int64(bytes.count) == block.length, name(of: bytes) == block.hash else {
            throw SyncError(code: .corrupt, message: "block \(block.hash) of \(what) does not match its hash; not served")
        }
        return bytes
    }
}
