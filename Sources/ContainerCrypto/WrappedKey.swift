import Crypto
import Foundation
import ItemModel
import _CryptoExtras

/// `keys/<id>`: the container's master key sealed under a key derived from one passphrase
/// by scrypt. Several may open one container; adding, changing or removing a passphrase
/// writes or deletes one such object and re-encrypts nothing.
public struct WrappedKey: Codable, Sendable, Equatable {
    public struct Scrypt: Codable, Sendable, Equatable {
        public var n: Int
        public var r: Int
        public var p: Int
        /// 32 random bytes, standard base64.
        public var salt: String
    }

    public var id: String
    public var kdf: Scrypt
    /// The sealed master key (nonce, ciphertext, tag), standard base64.
    public var sealed: String

    /// scrypt's cost: N = 2^17 (128 MiB, about half a second here); tests pass less.
    public static let defaultCost = 17
    /// The most a reader accepts, N = 2^20 (1 GiB, a few seconds): room for writers to
    /// raise the cost, and a bound on what a planted key object can make a reader spend.
    public static let maxCost = 20

    /// Seals `master` under `passphrase` for container `container`.
    public static func wrap(
        _ master: SymmetricKey, passphrase: String, container: String, id: String = ItemID.random().rawValue, cost: Int = defaultCost
    ) throws(CryptoError) -> WrappedKey {
        var salt = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = UInt8.random(in: 0...255, using: &generator) }
        let kdf = Scrypt(n: 1 << cost, r: 8, p: 1, salt: Data(salt).base64EncodedString())
        let kek = try derive(passphrase, kdf)
        let plain = master.withUnsafeBytes { Array($0) }
        do {
            let box = try AES.GCM.seal(plain, using: kek, authenticating: Array(context(container, id).utf8))
            return WrappedKey(id: id, kdf: kdf, sealed: box.combined!.base64EncodedString())
        } catch {
            throw CryptoError(code: .invalid, message: "cannot seal the master key", cause: error)
        }
    }

    /// The master key, if `passphrase` is this object's; nil if it is another's.
    public func unwrap(passphrase: String, container: String) throws(CryptoError) -> SymmetricKey? {
        guard kdf.n >= 1 << 10, kdf.n <= 1 << Self.maxCost, kdf.n & (kdf.n - 1) == 0, kdf.r == 8, kdf.p == 1,
              let sealedBytes = Data(base64Encoded: sealed), Data(base64Encoded: kdf.salt)?.count == 32
        else { throw CryptoError(code: .tampered, message: "keys/\(id) has scrypt parameters ubiqfs does not accept") }
        let kek = try Self.derive(passphrase, kdf)
        guard let box = try? AES.GCM.SealedBox(combined: sealedBytes),
              let plain = try? AES.GCM.open(box, using: kek, authenticating: Array(Self.context(container, id).utf8)),
              plain.count == 32
        else { return nil }
        return SymmetricKey(data: plain)
    }

    static func context(_ container: String, _ id: String) -> String { "ubiqfs key \(container) \(id)" }

    static func derive(_ passphrase: String, _ kdf: Scrypt) throws(CryptoError) -> SymmetricKey {
        guard let salt = Data(base64Encoded: kdf.salt) else { throw CryptoError(code: .tampered, message: "a key object's salt is not base64") }
        do {
            return try KDF.Scrypt.deriveKey(
                from: Array(passphrase.utf8), salt: salt, outputByteCount: 32, rounds: kdf.n, blockSize: kdf.r, parallelism: kdf.p,
                maxMemory: ((128 * 8) << Self.maxCost) + (1 << 20)
            )
        } catch {
            throw CryptoError(code: .invalid, message: "scrypt failed", cause: error)
        }
    }
}
