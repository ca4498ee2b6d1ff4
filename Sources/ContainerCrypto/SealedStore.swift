import ContainerStore
import ItemModel

/// The store of an encrypted container as the rest of ubiqfs sees it: every object is
/// sealed on its way in and opened on its way out, bound to its key, so the store holds
/// nothing readable and an object it changed, truncated or moved is refused (`corrupt`),
/// never served. Three kinds pass as they are: `container.json` (read before any key,
/// authenticated by its `encryption.check`), `keys/` (sealed by passphrases) and `packs/`
/// (whose blobs are sealed one by one, so each is read with a ranged `GET`).
public struct SealedStore: ContainerStore {
    public let base: any ContainerStore
    public let cipher: ContainerCipher

    public init(_ base: any ContainerStore, cipher: ContainerCipher) {
        self.base = base
        self.cipher = cipher
    }

    public var displayName: String { base.displayName + " (encrypted)" }
    public var congestion: StoreCongestion? { base.congestion }

    /// The keys stored as they are (see above).
    public static func passes(_ key: String) -> Bool {
        key == ContainerLayout.infoKey || key.hasPrefix(ContainerLayout.keyPrefix) || key.hasPrefix(ContainerLayout.packPrefix)
    }

    public func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] {
        if Self.passes(key) { return try await base.get(key, range: range) }
        let sealed = try await base.get(key, range: nil)
        let cipher = self.cipher
        let plain = try await OffloadedWork.run { () throws(StoreError) -> [UInt8] in
            do throws(CryptoError) { return try cipher.open(object: sealed, key: key) } catch { throw StoreError(code: .corrupt, message: error.message) }
        }
        guard let range else { return plain }
        guard range.lowerBound >= 0, range.upperBound <= Int64(plain.count), !range.isEmpty else {
            throw StoreError(code: .invalidKey, message: "range \(range) outside \(key) (\(plain.count) bytes)")
        }
        return Array(plain[Int(range.lowerBound) ..< Int(range.upperBound)])
    }

    /// Packs pass through as they arrive; a sealed object is opened whole first.
    public func stream(_ key: String, range: Range<Int64>, receive: ([UInt8]) async throws(StoreError) -> Void) async throws(StoreError) {
        if Self.passes(key) { return try await base.stream(key, range: range, receive: receive) }
        try await receive(try await get(key, range: range))
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
        try await base.put(key, try await sealed(key, bytes))
    }

    public func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
        try await base.putIfAbsent(key, try await sealed(key, bytes))
    }

    public func exists(_ key: String) async throws(StoreError) -> Bool { try await base.exists(key) }

    public func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
        try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    public func listObjects(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [StoredObject] {
        try await base.listObjects(prefix: prefix, startAfter: startAfter, limit: limit)
    }

    public func delete(_ key: String) async throws(StoreError) { try await base.delete(key) }

    public func watch(prefix: String, onChange: @escaping @Sendable () -> Void) -> (any StoreWatch)? {
        base.watch(prefix: prefix, onChange: onChange)
    }

    public func verify() async throws(StoreError) { try await base.verify() }

    private func sealed(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> [UInt8] {
        if Self.passes(key) { return bytes }
        let cipher = self.cipher
        return try await OffloadedWork.run { () throws(StoreError) -> [UInt8] in
            do throws(CryptoError) { return try cipher.seal(object: bytes, key: key) } catch { throw StoreError(code: .io, message: error.message, cause: error) }
        }
    }
}
