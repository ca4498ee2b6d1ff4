import ContainerStore
import Crypto
import Foundation
import ItemModel

/// The `keys/` objects of an encrypted container: the master key wrapped by each
/// passphrase that opens it. The master key never changes, so adding, changing or removing
/// a passphrase rewrites one small object and no data. Key material travels as 32 bytes.
public struct Keyring: Sendable {
    public let store: any ContainerStore
    public let container: String
    /// scrypt's cost (log2 N) for new key objects.
    public let cost: Int

    public init(store: any ContainerStore, container: String, cost: Int = WrappedKey.defaultCost) {
        self.store = store
        self.container = container
        self.cost = cost
    }

    /// A new random master key, wrapped by `passphrase` (its `keys/` object written).
    public func create(passphrase: String) async throws(CryptoError) -> [UInt8] {
        let master = ContainerCipher.randomMasterKey().withUnsafeBytes { Array($0) }
        _ = try await add(passphrase: passphrase, master: master)
        return master
    }

    /// Wraps `master` by one more passphrase; returns the new object's id.
    public func add(passphrase: String, master: [UInt8]) async throws(CryptoError) -> String {
        try Self.checkStrength(passphrase)
        let wrapped = try WrappedKey.wrap(SymmetricKey(data: master), passphrase: passphrase, container: container, cost: cost)
        let bytes: [UInt8]
        do { bytes = try RecordCodec.encode(wrapped) } catch { throw CryptoError(code: .invalid, message: "cannot encode a key object", cause: error) }
        try await call("cannot write keys/\(wrapped.id)") { store throws(StoreError) in try await store.put(ContainerLayout.keyObjectKey(wrapped.id), bytes) }
        return wrapped.id
    }

    /// The master key and the id of the object `passphrase` opens; `wrongPassphrase` if none.
    /// An object that is damaged or has parameters no reader accepts is passed over, so one
    /// planted object cannot lock every passphrase out.
    public func unlock(passphrase: String) async throws(CryptoError) -> (master: [UInt8], id: String) {
        let keys = try await call("cannot list the container's keys") { store throws(StoreError) in try await store.listAll(prefix: ContainerLayout.keyPrefix) }
        guard !keys.isEmpty else { throw CryptoError(code: .tampered, message: "the container is encrypted but its store holds no key object (keys/)") }
        var unusable: [String] = []
        for key in keys {
            let bytes = try await call("cannot read \(key)") { store throws(StoreError) in try await store.get(key) }
            guard let wrapped = try? RecordCodec.decode(WrappedKey.self, from: bytes), ContainerLayout.keyObjectKey(wrapped.id) == key else {
                unusable.append(key)
                continue
            }
            let container = self.container
            let opened: [UInt8]?
            do {
                opened = try await OffloadedWork.run { () throws(CryptoError) -> [UInt8]? in
                    try wrapped.unwrap(passphrase: passphrase, container: container)?.withUnsafeBytes { Array($0) }
                }
            } catch where error.code == .tampered {
                unusable.append(key)
                continue
            }
            if let master = opened { return (master, wrapped.id) }
        }
        let passedOver = unusable.isEmpty ? "" : " (\(unusable.count) of them damaged or of parameters ubiqfs does not accept: \(unusable.joined(separator: ", ")))"
        throw CryptoError(code: .wrongPassphrase, message: "wrong passphrase: none of the container's \(keys.count) key objects opens with it\(passedOver)")
    }

    /// Removes the object `passphrase` opens; the last one stays (the container would be lost).
    public func remove(passphrase: String) async throws(CryptoError) {
        let (_, id) = try await unlock(passphrase: passphrase)
        let keys = try await call("cannot list the container's keys") { store throws(StoreError) in try await store.listAll(prefix: ContainerLayout.keyPrefix) }
        guard keys.count > 1 else {
            throw CryptoError(code: .invalid, message: "this is the container's only passphrase: add another before removing it")
        }
        try await call("cannot delete keys/\(id)") { store throws(StoreError) in try await store.delete(ContainerLayout.keyObjectKey(id)) }
    }

    /// Replaces the object `old` opens by one `new` opens (written first: never none).
    public func change(from old: String, to new: String) async throws(CryptoError) {
        let (master, id) = try await unlock(passphrase: old)
        _ = try await add(passphrase: new, master: master)
        try await call("cannot delete keys/\(id)") { store throws(StoreError) in try await store.delete(ContainerLayout.keyObjectKey(id)) }
    }

    /// At least 8 characters: a passphrase guards everything in the container.
    static func checkStrength(_ passphrase: String) throws(CryptoError) {
        guard passphrase.count >= 8 else { throw CryptoError(code: .invalid, message: "a passphrase has at least 8 characters") }
    }

    private func call<T: Sendable>(_ what: String, _ body: @Sendable (any ContainerStore) async throws(StoreError) -> T) async throws(CryptoError) -> T {
        do { return try await body(store) } catch {
            throw CryptoError(code: error.code == .unreachable ? .unreachable : .io, message: what, cause: error)
        }
    }
}
