import ContainerCrypto
import ContainerStore
import GRDB
import ItemModel
import MetadataStore

/// Opens a container: reads `container.json`, or creates it (put-if-absent, so two
/// devices creating one container at once agree), and binds the state dir to it. A copy
/// is kept in the state database, so a device that joined before starts offline too.
/// Every store call is bounded by `timeout`: a hung store never holds a mount forever.
/// A container of an older format is upgraded in place (`upgrade`: a read-write mount).
public enum ContainerBootstrap {
    public static func open(
        store: any ContainerStore, metadata: MetadataStore, deviceName: String, timeout: Duration = .seconds(60),
        newestFormat: Int = ContainerInfo.currentFormat, upgrade: Bool = true, unlock: ContainerUnlock = ContainerUnlock()
    ) async throws(SyncError) -> (ContainerInfo, DeviceIdentity, ContainerCipher?) {
        let formats = ContainerInfo.readableFormats(newest: newestFormat)
        let info: ContainerInfo
        var created: [UInt8]?
        var reached = true
        do {
            (info, created) = try await readOrCreate(store, timeout: timeout, format: formats.upperBound, unlock: unlock)
        } catch where error.code == .unreachable {
            guard let known = try? metadata.setting(SettingKey.containerInfo).flatMap({ try? RecordCodec.decode(ContainerInfo.self, from: Array($0.utf8)) }) else {
                throw error
            }
            (info, reached) = (known, false)
        }
        guard formats.contains(info.format) else {
            throw SyncError(code: .container, message: "the container has format \(info.format); this ubiqfs supports \(formats.upperBound); upgrade ubiqfs")
        }
        guard info.blockSize >= 4096, info.blockSize <= 64 * 1024 * 1024 else {
            throw SyncError(code: .container, message: "the container's block size \(info.blockSize) is out of range")
        }
        // Before the state dir is bound: a wrong passphrase leaves nothing behind.
        let cipher = try await cipher(for: info, store, unlock: unlock, created: created, reached: reached)
        do {
            let (boundID, deviceID) = try await metadata.write { db -> (String?, String) in
                let bound = try MetadataStore.setting(SettingKey.containerID, db)
                if bound == nil { try MetadataStore.setSetting(SettingKey.containerID, info.id, db) }
                if bound == nil || bound == info.id {
                    try remember(info, db)
                }
                var device = try MetadataStore.setting(SettingKey.deviceID, db)
                if device == nil {
                    let fresh = ItemID.random().rawValue
                    try MetadataStore.setSetting(SettingKey.deviceID, fresh, db)
                    device = fresh
                }
                return (bound, device!)
            }
            if let boundID, boundID != info.id {
                throw SyncError(code: .container, message: "this state dir belongs to another container (\(boundID)); use another --state-dir")
            }
            let identity = DeviceIdentity(id: deviceID, name: deviceName)
            guard upgrade, reached, info.format < formats.upperBound else { return (info, identity, cipher) }
            return (try await upgradeInPlace(info, to: formats.upperBound, cipher: cipher, store, metadata, timeout: timeout), identity, cipher)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(code: .metadata, message: "cannot record the container in the state database", cause: error)
        }
    }

    /// An older format to `format` in place: every record, checkpoint and object of an older
    /// format is also one of the newer (each adds only what older ones never wrote), so only
    /// `container.json` changes, and this device's next record says the new format (a
    /// settings record that changes nothing, if nothing else is pending). Devices of this
    /// version that see that record write the new format from then on; older ones stop at
    /// it with a clear line, their local changes kept.
    private static func upgradeInPlace(
        _ old: ContainerInfo, to format: Int, cipher: ContainerCipher?, _ store: any ContainerStore, _ metadata: MetadataStore,
        timeout: Duration
    ) async throws(SyncError) -> ContainerInfo {
        var upgraded = old
        upgraded.format = format
        // The check covers the format: only a holder of the key can upgrade the container.
        if let cipher, upgraded.encryption != nil {
            let check = cipher.check(of: upgraded)
            upgraded.encryption?.check = check
        }
        let info = upgraded
        do {
            let bytes = try RecordCodec.encode(info)
            try await StoreDeadline.run(timeout) { () throws(StoreError) in try await store.put(ContainerLayout.infoKey, bytes) }
        } catch {
            throw SyncError.wrap(error, "cannot upgrade the container in \(store.displayName) to format \(format)")
        }
        do {
            try await metadata.write { db in
                try remember(info, db)
                try ContainerSettings.makePending(SettingsChange(), db)
            }
        } catch {
            throw SyncError(code: .metadata, message: "cannot record the upgrade to format \(format)", cause: error)
        }
        return info
    }

    /// The copy of `container.json` a device starts with while the store is away.
    private static func remember(_ info: ContainerInfo, _ db: Database) throws {
        try MetadataStore.setSetting(SettingKey.containerInfo, String(decoding: try RecordCodec.encode(info), as: UTF8.self), db)
    }

    /// The container's `container.json`, and the master key if this call created it encrypted.
    private static func readOrCreate(
        _ store: any ContainerStore, timeout: Duration, format: Int, unlock: ContainerUnlock
    ) async throws(SyncError) -> (ContainerInfo, [UInt8]?) {
        for _ in 0..<3 {
            do {
                let bytes = try await StoreDeadline.run(timeout) { () throws(StoreError) in try await store.get(ContainerLayout.infoKey) }
                do {
                    return (try RecordCodec.decode(ContainerInfo.self, from: bytes), nil)
                } catch {
                    throw SyncError(code: .container, message: "container.json in \(store.displayName) is not readable", cause: error)
                }
            } catch let error as SyncError {
                throw error
            } catch let error as StoreError where error.code == .notFound {
                var (info, master) = (ContainerInfo(id: ItemID.random().rawValue, format: format, created: Timestamp.now()), [UInt8]?.none)
                if unlock.encrypt { (info, master) = try await createEncrypted(store, format: format, unlock: unlock) }
                do {
                    let bytes = try RecordCodec.encode(info)
                    if try await StoreDeadline.run(timeout, { () throws(StoreError) in try await store.putIfAbsent(ContainerLayout.infoKey, bytes) }) { return (info, master) }
                } catch {
                    throw SyncError.wrap(error, "cannot create the container in \(store.displayName)")
                }
            } catch {
                throw SyncError.wrap(error, "cannot read the container from \(store.displayName)")
            }
        }
        throw SyncError(code: .container, message: "cannot read or create container.json in \(store.displayName)")
    }
}
