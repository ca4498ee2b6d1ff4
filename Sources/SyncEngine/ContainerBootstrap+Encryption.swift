import ContainerCrypto
import ContainerStore
import Foundation
import Glibc
import ItemModel

/// Creating and opening encrypted containers (docs/CONTAINER-FORMAT.md, "Encryption"):
/// the key objects are written before `container.json`, and a device opens the container
/// only with a master key that opens one of them and matches `container.json`'s check.
extension ContainerBootstrap {
    /// A new encrypted container's `container.json` (its key object written first).
    static func createEncrypted(
        _ store: any ContainerStore, format: Int, unlock: ContainerUnlock
    ) async throws(SyncError) -> (ContainerInfo, [UInt8]) {
        guard format >= 2 else {
            throw SyncError(code: .invalid, message: "encryption needs format 2 or later, which this device does not write (UBIQFS_FORMAT=1)")
        }
        guard let passphrase = unlock.passphrase else {
            throw SyncError(code: .invalid, message: "--encrypt needs a passphrase: --passphrase-file FILE, UBIQFS_PASSPHRASE_FILE, or a terminal to ask on")
        }
        var info = ContainerInfo(id: ItemID.random().rawValue, format: format, created: Timestamp.now())
        let master: [UInt8]
        do { master = try await Keyring(store: store, container: info.id, cost: unlock.cost).create(passphrase: passphrase) } catch {
            throw SyncError(code: error.code == .unreachable ? .unreachable : .invalid, message: "cannot create the container's key: \(error.message)", cause: error)
        }
        // The check covers the fields other than `encryption`.
        let check = ContainerCipher(masterBytes: master, container: info.id).check(of: info)
        info.encryption = ContainerInfo.Encryption(scheme: ContainerCipher.scheme, check: check)
        return (info, master)
    }

    /// The cipher of an encrypted container (nil for a plain one, which must not look
    /// like an encrypted one stripped of its `encryption`).
    static func cipher(
        for info: ContainerInfo, _ store: any ContainerStore, unlock: ContainerUnlock, created: [UInt8]?, reached: Bool
    ) async throws(SyncError) -> ContainerCipher? {
        let kept = unlock.keyFile.flatMap(readKey)
        guard let encryption = info.encryption else {
            if kept != nil {
                throw SyncError(code: .container, message: "container.json says the container is not encrypted, but this device knows it is: the store changed it; nothing is mounted")
            }
            // A passphrase is not needed, and ignored (one service may give one to every
            // mount); asking to encrypt an existing plain container is a mistake to say.
            if unlock.encrypt && created == nil {
                throw SyncError(code: .invalid, message: "the container exists and is not encrypted: --encrypt only makes new containers")
            }
            if reached, try await hasKeyObjects(store) {
                throw SyncError(code: .container, message: "container.json says the container is not encrypted, but its store holds key objects: the store changed it; nothing is mounted")
            }
            return nil
        }
        guard encryption.scheme == ContainerCipher.scheme else {
            throw SyncError(code: .container, message: "the container is encrypted with \(encryption.scheme); this ubiqfs knows \(ContainerCipher.scheme)")
        }
        var master = created ?? kept
        if master == nil {
            guard let passphrase = unlock.passphrase else {
                throw SyncError(code: .locked, message: "the container is encrypted: give its passphrase (--passphrase-file FILE, UBIQFS_PASSPHRASE_FILE, or a terminal to ask on)")
            }
            do { master = try await Keyring(store: store, container: info.id).unlock(passphrase: passphrase).master } catch {
                throw SyncError(code: error.code == .wrongPassphrase ? .locked : error.code == .unreachable ? .unreachable : .container, message: error.message, cause: error)
            }
        }
        let cipher = ContainerCipher(masterBytes: master!, container: info.id)
        guard cipher.check(of: info) == encryption.check else {
            throw SyncError(code: .container, message: kept != nil && created == nil
                ? "container.json does not match the key this device keeps: the store changed it, or the state dir is another container's; nothing is mounted"
                : "container.json was changed in the store (its check does not match the key); nothing is mounted")
        }
        if let file = unlock.keyFile, kept == nil { try writeKey(master!, to: file) }
        return cipher
    }

    private static func hasKeyObjects(_ store: any ContainerStore) async throws(SyncError) -> Bool {
        do { return !(try await store.list(prefix: ContainerLayout.keyPrefix, startAfter: nil, limit: 1)).isEmpty } catch {
            throw SyncError.wrap(error, "cannot list the container's keys")
        }
    }

    /// The master key this device keeps (32 bytes, base64), if any.
    static func readKey(_ path: String) -> [UInt8]? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else { return nil }
        return Array(bytes)
    }

    /// Written to a new file of mode 0600, then renamed over: never readable by others,
    /// never half-written.
    static func writeKey(_ master: [UInt8], to path: String) throws(SyncError) {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SyncError(code: .cache, message: "cannot write the container's key to \(path): \(String(cString: strerror(errno)))") }
        let text = Array((Data(master).base64EncodedString() + "\n").utf8)
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == text.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SyncError(code: .cache, message: "cannot write the container's key to \(path)")
        }
    }
}
