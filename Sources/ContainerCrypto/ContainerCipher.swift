import Crypto
import Foundation
import ItemModel

/// The keys of an encrypted container (docs/CONTAINER-FORMAT.md, "Encryption"), derived
/// from its master key: sealing and opening of objects and packed blobs, names of content,
/// and the check of `container.json`. Every primitive is swift-crypto's: HKDF-SHA256,
/// HMAC-SHA256, AES-256-GCM with a random 96-bit nonce per seal.
public struct ContainerCipher: Sendable {
    public static let scheme = "ubiqfs-aes256gcm-1"
    /// A sealed object or blob is this much longer than its padded plaintext.
    public static let overhead = 12 + 16

    // Bytes, not `SymmetricKey` (not `Sendable` here); made into keys where used.
    private let nameKey: [UInt8]
    private let contentKey: [UInt8]
    private let metadataKey: [UInt8]
    /// The key of the chunker's gear table (`ChunkerParameters.keyed`): cuts of content say
    /// nothing of it to whoever lacks the key. It names and seals nothing.
    public let chunkingKey: [UInt8]
    var names: SymmetricKey { SymmetricKey(data: nameKey) }
    var content: SymmetricKey { SymmetricKey(data: contentKey) }
    var metadata: SymmetricKey { SymmetricKey(data: metadataKey) }

    /// `container`: the container's id, so two containers' keys differ even under one master key.
    public init(master: SymmetricKey, container: String) {
        func derive(_ purpose: String) -> [UInt8] {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: master, salt: Array("ubiqfs \(container)".utf8), info: Array("ubiqfs \(purpose)".utf8), outputByteCount: 32)
                .withUnsafeBytes { Array($0) }
        }
        nameKey = derive("names")
        contentKey = derive("content")
        metadataKey = derive("metadata")
        chunkingKey = derive("chunking")
    }

    public init(masterBytes: [UInt8], container: String) {
        self.init(master: SymmetricKey(data: masterBytes), container: container)
    }

    public static func randomMasterKey() -> SymmetricKey { SymmetricKey(size: .bits256) }

    /// The name of content: HMAC-SHA256 under the names key, lowercase hex. Dedup works
    /// inside the container; outside it, the name says nothing of the bytes.
    public func name(of bytes: [UInt8]) -> String {
        Self.hex(HMAC<SHA256>.authenticationCode(for: bytes, using: names))
    }

    /// Seals an object stored under `key` (content keys for `blocks/`, metadata for the rest).
    public func seal(object bytes: [UInt8], key: String) throws(CryptoError) -> [UInt8] {
        try Self.seal(bytes, with: isContent(key) ? content : metadata, context: "object " + key)
    }

    public func open(object bytes: [UInt8], key: String) throws(CryptoError) -> [UInt8] {
        try Self.open(bytes, with: isContent(key) ? content : metadata, context: "object " + key, what: key)
    }

    /// A packed blob is sealed alone (so it is read with one ranged `GET`) and bound to its
    /// name, not its place: a repack copies it as it is, and bytes put in its place that
    /// are another blob's do not open.
    public func seal(blob bytes: [UInt8], name: String) throws(CryptoError) -> [UInt8] {
        try Self.seal(bytes, with: content, context: "blob " + name)
    }

    public func open(blob bytes: [UInt8], name: String) throws(CryptoError) -> [UInt8] {
        try Self.open(bytes, with: content, context: "blob " + name, what: "blob \(name)")
    }

    /// The authenticator of `container.json`'s fields, so a device with the key sees a
    /// changed format, block size or id (and a stripped `encryption` refuses elsewhere).
    public func check(of info: ContainerInfo) -> String {
        let text = "ubiqfs container \(info.id) \(info.format) \(info.blockSize) \(info.created)"
        return Self.hex(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: metadata))
    }

    private func isContent(_ key: String) -> Bool {
        key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix)
    }

    static func seal(_ bytes: [UInt8], with key: SymmetricKey, context: String) throws(CryptoError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(Padme.pad(bytes), using: key, authenticating: Array(("ubiqfs " + context).utf8))
            guard let combined = box.combined else { throw CryptoError(code: .invalid, message: "AES-GCM gave no combined box") }
            return Array(combined)
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError(code: .invalid, message: "cannot seal \(context)", cause: error)
        }
    }

    static func open(_ bytes: [UInt8], with key: SymmetricKey, context: String, what: String) throws(CryptoError) -> [UInt8] {
        let opened: Data
        do {
            opened = try AES.GCM.open(AES.GCM.SealedBox(combined: bytes), using: key, authenticating: Array(("ubiqfs " + context).utf8))
        } catch {
            throw CryptoError(code: .tampered, message: "\(what) does not open with the container's key: changed, truncated or moved in the store", cause: error)
        }
        // One copy: the padding is cut from the opened bytes, not from a copy of them.
        guard let marker = opened.lastIndex(where: { $0 != 0 }), opened[marker] == 0x80 else {
            throw CryptoError(code: .tampered, message: "\(what) has no valid padding")
        }
        return Array(opened[opened.startIndex ..< marker])
    }

    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
