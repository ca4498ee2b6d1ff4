import CloudFileSystem
import ContainerCrypto
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// Encrypted containers (format 2): the store holds nothing readable, every object it
/// changes, truncates or moves is refused (never served), and only the passphrase opens it.
@Suite struct EncryptionTests {
    static let passphrase = "correct horse battery"

    static func configuration(_ passphrase: String? = Self.passphrase, encrypt: Bool = false) -> SyncConfiguration {
        var configuration = PackTests.formatTwo
        configuration.collectionInterval = .zero
        configuration.encryption = ContainerUnlock(passphrase: passphrase, encrypt: encrypt)
        configuration.encryption.cost = 10
        return configuration
    }

    /// Values computed by a second implementation (Python's hmac, hashlib and
    /// cryptography), so the format is what CONTAINER-FORMAT.md says, not what this code does.
    @Test func knownAnswers() throws {
        #expect([1, 2, 3, 100, 1000, 1025, 100_000, 4_194_304, 4_194_305].map(Padme.paddedLength) == [1, 2, 3, 104, 1024, 1088, 100_352, 4_194_304, 4_325_376])
        let cipher = ContainerCipher(masterBytes: Array(0..<32), container: "c0ffee")
        #expect(cipher.name(of: Array("hello".utf8)) == "79fbaee96718b89fa03913ab08e610aedf27451f13fe8f0f9b31f61c865655e0")
        let info = ContainerInfo(id: "c0ffee", format: 2, blockSize: 4_194_304, created: 1_700_000_000_000_000_000)
        #expect(cipher.check(of: info) == "8726ba0ea6d0d784db3550ec7d4315120036caa39587e5f7aefbdd93d4e14bc4")
        let sealed = Self.hexBytes("000000000000000000000000b0195898ec264978076b8ef172ee7824cc7c2cacbece")
        #expect(try cipher.open(object: sealed, key: "blocks/ab") == Array("hello".utf8))
        // Bound to its key: the same bytes under another key do not open.
        #expect(throws: CryptoError.self) { try cipher.open(object: sealed, key: "blocks/ac") }
        // A passphrase's key object opens with it alone.
        let wrapped = try WrappedKey.wrap(.init(data: Array(0..<32)), passphrase: Self.passphrase, container: "c0ffee", cost: 10)
        #expect(try wrapped.unwrap(passphrase: Self.passphrase, container: "c0ffee")?.withUnsafeBytes { Array($0) } == Array(0..<32))
        #expect(try wrapped.unwrap(passphrase: "another passphrase", container: "c0ffee") == nil)
        #expect(try wrapped.unwrap(passphrase: Self.passphrase, container: "another") == nil)
    }

    /// Readers accept scrypt costs up to 2^20 (room for writers to raise it), refuse more
    /// before deriving anything, and pass over a key object they refuse.
    @Test func keyObjectsOfHigherCostOpenAndRefusedOnesArePassedOver() async throws {
        let master = Array(UInt8(0)..<32)
        let costly = try WrappedKey.wrap(.init(data: master), passphrase: Self.passphrase, container: "c0ffee", cost: 18)
        #expect(try costly.unwrap(passphrase: Self.passphrase, container: "c0ffee")?.withUnsafeBytes { Array($0) } == master)
        var tooCostly = costly
        tooCostly.kdf.n = 1 << (WrappedKey.maxCost + 1)
        #expect(throws: CryptoError.self) { try tooCostly.unwrap(passphrase: Self.passphrase, container: "c0ffee") }

        let store = InMemoryStore()
        let keyring = Keyring(store: store, container: "c0ffee", cost: 10)
        let id = try await keyring.add(passphrase: Self.passphrase, master: master)
        // Planted before it in key order: one refused, one under another key.
        tooCostly.id = "00000000000000000000000000000000"
        try await store.put(ContainerLayout.keyObjectKey(tooCostly.id), try RecordCodec.encode(tooCostly))
        try await store.put(ContainerLayout.keyObjectKey("00000000000000000000000000000001"), try RecordCodec.encode(costly))
        let unlocked = try await keyring.unlock(passphrase: Self.passphrase)
        #expect(unlocked.master == master && unlocked.id == id)
        // A passphrase is its bytes: the same text in another Unicode normalisation is another.
        let nfc = try WrappedKey.wrap(.init(data: master), passphrase: "caf\u{e9} au lait", container: "c0ffee", cost: 10)
        #expect(try nfc.unwrap(passphrase: "cafe\u{301} au lait", container: "c0ffee") == nil)
        #expect(try nfc.unwrap(passphrase: "caf\u{e9} au lait", container: "c0ffee") != nil)
        let wrong = await Self.refusal { _ = try await keyring.unlock(passphrase: "another passphrase") }
        #expect(wrong?.contains("2 of them damaged or of parameters ubiqfs does not accept") == true, "\(wrong ?? "")")
    }

    /// Why `body` failed, or nil if it did not.
    static func refusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func hexBytes(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }
    }

    /// Every object's raw bytes, as the store's operator sees them.
    static func rawObjects(_ store: InMemoryStore) async throws -> [String: [UInt8]] {
        var objects: [String: [UInt8]] = [:]
        for key in store.keys { objects[key] = try await store.get(key) }
        return objects
    }

    @Test func theStoreHoldsNothingReadableAndAnotherDeviceReadsEverything() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypt: true))
        let secrets = ["zanzibar-secret-folder", "quixotic-note.txt", "PLAINTEXT-MARKER-CONTENT", "xattr-value-marker", "symlink-target-marker"]
        try a.mkdir(secrets[0])
        try await a.write("\(secrets[0])/\(secrets[1])", String(repeating: secrets[2], count: 3))
        try await a.write("\(secrets[0])/small.txt", String(repeating: secrets[2], count: 200))
        let big = CollectionTests.content(5, size: 700_000)
        try await a.write("\(secrets[0])/big.bin", Array(secrets[2].utf8) + big)
        let note = try #require(a.inode("\(secrets[0])/\(secrets[1])"))
        try a.core.setXattr(note, name: Array("user.tag".utf8), value: Array(secrets[3].utf8), flags: 0)
        _ = try a.core.symlink(parent: try #require(a.inode(secrets[0])), name: Array("link".utf8), target: Array(secrets[4].utf8), caller: TestDevice.caller)
        try await a.sync()

        let objects = try await Self.rawObjects(store)
        #expect(objects.keys.contains { $0.hasPrefix(ContainerLayout.keyPrefix) })
        // Every file's blocks are packed (a large file's in packs of its own).
        #expect(objects.keys.contains { $0.hasPrefix(ContainerLayout.packPrefix) } && !objects.keys.contains { $0.hasPrefix(ContainerLayout.blockPrefix) })
        for (key, bytes) in objects {
            let text = String(decoding: bytes, as: UTF8.self)
            for secret in secrets { #expect(!text.contains(secret), "\(key) holds \(secret)") }
            #expect(!text.contains("\"ops\""), "\(key) holds a readable record")
        }
        // Content names are keyed: not the SHA-256 of the bytes.
        let plainName = ContentHasher.sha256Hex(Array(big[0 ..< 256 * 1024 - secrets[2].utf8.count]))
        #expect(!objects.keys.contains { $0.contains(plainName) })
        let bigIno = try #require(a.inode("\(secrets[0])/big.bin"))
        let bigID = try #require(try await a.metadata.read { db in try ItemRow.find(ino: bigIno, db) }).itemID
        let bigBlocks = try #require(try await a.metadata.read { db in try BaseSnapshots.find(bigID, db) }?.blocks)
        #expect(bigBlocks.count > 1 && bigBlocks[0].length == 256 * 1024 && bigBlocks[0].hash != plainName)
        // Sizes show coarsely: every sealed object's length is a Padmé length plus the seal.
        for (key, bytes) in objects where !SealedStore.passes(key) {
            #expect(Padme.paddedLength(bytes.count - ContainerCipher.overhead) == bytes.count - ContainerCipher.overhead, "\(key)")
        }

        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration())
        #expect(try await b.read("\(secrets[0])/\(secrets[1])") == String(repeating: secrets[2], count: 3))
        #expect(try await b.readBytes("\(secrets[0])/big.bin") == Array(secrets[2].utf8) + big)
        // b keeps the key: it restarts without the passphrase.
        let stateDir = b.stateDir
        await b.shutdown()
        let again = try await TestDevice(store: store, name: "b", stateDir: stateDir, configuration: Self.configuration(nil))
        #expect(try await again.readBytes("\(secrets[0])/big.bin") == Array(secrets[2].utf8) + big)
        let mode = try FileManager.default.attributesOfItem(atPath: stateDir + "/" + DeviceStack.keyFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        for device in [a, again] { await device.shutdown() }
    }

    @Test func aWrongOrMissingPassphraseIsRefusedBeforeAnythingIsBound() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypt: true))
        try await a.write("f", "hello")
        try await a.sync()
        let stateDir = try TemporaryDirectories.make("ubiqfs-dev-b")
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "b", stateDir: stateDir, configuration: Self.configuration("not the passphrase")) }?.contains("wrong passphrase") == true)
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "b", stateDir: stateDir, configuration: Self.configuration(nil)) }?.contains("the container is encrypted: give its passphrase") == true)
        // A key object changed in the store opens with no passphrase: refused the same way.
        let keyObject = try #require(store.keys.first { $0.hasPrefix(ContainerLayout.keyPrefix) })
        let original = try await store.get(keyObject)
        var wrapped = try RecordCodec.decode(WrappedKey.self, from: original)
        wrapped.kdf.salt = Data(repeating: 7, count: 32).base64EncodedString()
        try await store.put(keyObject, try RecordCodec.encode(wrapped))
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "b", stateDir: stateDir, configuration: Self.configuration()) }?.contains("wrong passphrase") == true)
        try await store.put(keyObject, original)
        // A plain container ignores a passphrase, and refuses --encrypt: it exists.
        let plainStore = InMemoryStore()
        let plain = try await TestDevice(store: plainStore, name: "p", configuration: PackTests.formatTwo)
        await plain.shutdown()
        let given = try await TestDevice(store: plainStore, name: "q", configuration: Self.configuration())
        await given.shutdown()
        #expect(await Self.refusal { _ = try await TestDevice(store: plainStore, name: "r", configuration: Self.configuration(encrypt: true)) }?
            .contains("the container exists and is not encrypted") == true)
        let b = try await TestDevice(store: store, name: "b", stateDir: stateDir, configuration: Self.configuration())
        #expect(try await b.read("f") == "hello")
        for device in [a, b] { await device.shutdown() }
    }

    @Test func changedMovedOrTruncatedObjectsAreRefusedAndTheRestServed() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypt: true))
        try await a.write("first", "first file")
        try await a.sync()
        try await a.write("packed", String(repeating: "p", count: 3000))
        try await a.write("large.bin", CollectionTests.content(9, size: 600_000))
        try await a.sync()
        try await a.write("third", "third file")
        try await a.sync()
        var objects = try await Self.rawObjects(store)
        // journal/2 replaced by journal/1's bytes (a move), the large file's pack cut short,
        // the small file's packed blob's bytes flipped.
        try await store.put(ContainerLayout.journalKey(2), objects[ContainerLayout.journalKey(1)]!)
        let packs = objects.filter { $0.key.hasPrefix(ContainerLayout.packPrefix) }.sorted { $0.value.count > $1.value.count }
        #expect(packs.count == 2 && packs[0].value.count > 600_000 && packs[1].value.count < 10_000, "\(packs.map(\.value.count))")
        try await store.put(packs[0].key, Array(packs[0].value.dropLast(100)))
        let packKey = packs[1].key
        var pack = objects[packKey]!
        pack[pack.count / 2] ^= 1
        try await store.put(packKey, pack)

        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration())
        let errors = await b.engine.status().errors
        #expect(errors.contains { $0.contains("journal record 2") && $0.contains("does not open") }, "\(errors)")
        #expect(try await b.read("first") == "first file")
        #expect(try await b.read("third") == "third file")
        #expect(b.inode("packed") == nil && b.inode("large.bin") == nil)
        // a's own files: the large one's blocks and the packed blob are refused at read.
        let c = try await TestDevice(store: store, name: "c", configuration: Self.configuration())
        for name in ["large.bin", "packed"] {
            try a.core.evict(try #require(a.inode(name)))
            await #expect(throws: (any Error).self, "\(name) was served") { _ = try await a.readBytes(name) }
        }

        // container.json changed: a new device refuses it; stripped of its encryption,
        // both a device that knows the key and a new one refuse it.
        objects = try await Self.rawObjects(store)
        var info = try RecordCodec.decode(ContainerInfo.self, from: objects[ContainerLayout.infoKey]!)
        info.blockSize = 1 << 20
        try await store.put(ContainerLayout.infoKey, try RecordCodec.encode(info))
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "d", configuration: Self.configuration()) }?.contains("container.json was changed in the store") == true)
        info.blockSize = 4 << 20
        info.encryption = nil
        try await store.put(ContainerLayout.infoKey, try RecordCodec.encode(info))
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "e", configuration: Self.configuration(nil)) }?.contains("its store holds key objects") == true)
        let stateDir = c.stateDir
        await c.shutdown()
        #expect(await Self.refusal { _ = try await TestDevice(store: store, name: "c", stateDir: stateDir, configuration: Self.configuration(nil)) }?.contains("this device knows it is") == true)
        for device in [a, b] { await device.shutdown() }
    }

    /// The store shows two devices two histories (both commits "won" journal/N): the
    /// next record one of them reads names a record it never saw, and it stops there.
    @Test func aForkedJournalIsDetected() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a", configuration: Self.configuration(encrypt: true))
        let b = try await TestDevice(store: store, name: "b", configuration: Self.configuration())
        try await a.write("one", "from a")
        try await a.sync()
        try await b.sync()
        let fork = await a.engine.status().lastSeq + 1
        try await a.write("two", "a's side of the fork")
        try await a.sync()
        // The operator hides a's record from b, which commits its own in the same place.
        try await store.delete(ContainerLayout.journalKey(fork))
        try await b.write("three", "b's side of the fork")
        try await b.sync()
        #expect(await b.engine.status().lastSeq == fork)
        try await a.write("four", "after the fork")
        try await a.sync()
        let refusal = await Self.refusal { try await b.sync() }
        #expect(refusal?.contains("journal record \(fork + 1) does not follow record \(fork)") == true, "\(refusal ?? "no refusal")")
        #expect(await b.engine.status().errors.contains { $0.contains("different histories") })
        #expect(b.inode("four") == nil)
        for device in [a, b] { await device.shutdown() }
    }

    /// A checkpoint and a history object changed in the store: a device joining after a
    /// compaction refuses both and says so, and serves nothing from them.
    @Test func aChangedCheckpointOrHistoryIsRefused() async throws {
        let store = InMemoryStore()
        var configuration = Self.configuration(encrypt: true)
        configuration.gapCheckInterval = .zero
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        try await a.write("kept.txt", "kept")
        try await a.sync()
        let report = try await CompactionTests.compact(a)
        let through = try #require(report.compactedThrough)
        for key in [ContainerLayout.checkpointKey(through)] + store.keys.filter({ $0.hasPrefix(ContainerLayout.historyPrefix) }) {
            var bytes = try await store.get(key)
            bytes[bytes.count / 2] ^= 1
            try await store.put(key, bytes)
        }
        let refusal = await Self.refusal { _ = try await TestDevice(store: store, name: "b", configuration: Self.configuration()) }
        #expect(refusal?.contains("no checkpoint after it is readable") == true, "\(refusal ?? "joined")")
        #expect(try await a.read("kept.txt") == "kept")
        await a.shutdown()
    }
}
