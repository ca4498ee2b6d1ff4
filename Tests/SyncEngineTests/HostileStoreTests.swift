import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import S3Store
import SeaweedFSFixture
import SyncEngine
import Testing

/// A store folder that others write, randomized: after one device commits a tree, objects
/// of the store (records, blocks, packs, checkpoints) are replaced by symlinks out of it,
/// FIFOs, folders, huge sparse files, garbage or halves of themselves. A second device
/// then joins and reads everything. It must not hang, must not read gigabytes into memory,
/// must write nothing outside its places, and must serve each file exactly, or fail it
/// (or lack it, when the record naming it was refused): never other bytes. It must then
/// go on working (a new file of its own reaches a third device).
///
/// The same against a real S3 service, where damage is what a bucket's other writers can
/// do: objects overwritten with garbage, halves, or more bytes than may be at their key.
///
/// Seeded: `UBIQFS_HOSTILE_SEED=<seed>` replays one run. The run with no damage is the
/// control: every file must then be exact, or the checker could pass anything.
@Suite struct HostileStoreTests {
    static let explicitSeed = ProcessInfo.processInfo.environment["UBIQFS_HOSTILE_SEED"].flatMap(UInt64.init)

    enum Damage: CaseIterable { case symlinkOut, fifo, folder, huge, garbage, half }

    // Time limits here guard against a hang, not a speed claim: beside stress-ng a CI
    // machine took more than 5 minutes.
    @Test(.timeLimit(.minutes(20)), arguments: explicitSeed.map { [$0] } ?? [0, 11, 12, 13, 14, 15])
    func aDamagedStoreFolderIsNeverFollowedAndNeverServesOtherBytes(seed: UInt64) async throws {
        let root = try TemporaryDirectories.make("ubiqfs-hostile-store")
        let outside = root + "/outside"
        try FileManager.default.createDirectory(atPath: outside + "/folder", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: outside + "/secret", contents: Data("secret".utf8)))
        let store = try LocalFolderStore(root: root + "/shared", container: "c")
        try await Self.joinAfterDamage(seed: seed, store: store) { rng in
            try Self.damage(store.base, outside: outside, count: 1 + Int(rng.next() % 4), &rng)
        }
        try Self.expectOutsideUntouched(outside)
    }

    /// The same over a real S3 service (SeaweedFS): objects overwritten with garbage, with
    /// halves of themselves, or with more bytes than may be at their key.
    @Test(.timeLimit(.minutes(20)), arguments: explicitSeed.map { [$0] } ?? [0, 21, 22, 23, 24])
    func aDamagedS3StoreNeverServesOtherBytes(seed: UInt64) async throws {
        let server = try await SeaweedServer.shared()
        let store = try await server.store(prefix: "hostile-\(UUID().uuidString.prefix(8))", container: "c")
        try await Self.joinAfterDamage(seed: seed, store: store) { rng in
            try await Self.damage(store, count: 1 + Int(rng.next() % 4), &rng)
        }
    }

    /// One device commits a tree, `damage` spoils the store (none for seed 0, the control),
    /// and a second device joins and reads everything: each file exact or failed (or absent
    /// when the record naming it was refused), memory within a bound; then it goes on.
    static func joinAfterDamage(seed: UInt64, store: any ContainerStore, damage: (inout SplitMix64) async throws -> [String]) async throws {
        var rng = SplitMix64(seed: seed)
        let a = try await TestDevice(store: store, name: "a")
        var written: [String: [UInt8]] = [:]
        for index in 0..<14 {
            let size = [10, 900, 3000, 70_000, 300_000][Int(rng.next() % 5)]
            let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if index % 5 == 0 && index > 0 { try a.mkdir("d\(index)") }
            let path = index % 5 == 0 && index > 0 ? "d\(index)/f\(index)" : "f\(index)"
            try await a.write(path, bytes)
            written[path] = bytes
            if index % 4 == 3 { try await a.sync() }
        }
        try await a.sync()
        await a.shutdown()

        let damaged = seed == 0 ? [] : try await damage(&rng)
        // Resident memory is the whole process's: measured while no other test holds much.
        let joined = try await ResidentMemory.exclusive { () async throws -> TestDevice? in
            let rssBefore = ResidentMemory.bytes()
            let b: TestDevice
            do {
                b = try await TestDevice(store: store, name: "b")
            } catch let error as SyncError where seed != 0 && error.message.contains("does not follow") {
                // A record changed in place breaks the chain of records (each names the hash of
                // the one before): sync stops there and says so, as for a forked journal.
                return nil
            }
            var served = 0
            for (path, bytes) in written.sorted(by: { $0.key < $1.key }) {
                guard b.inode(path) != nil else {
                    #expect(seed != 0, "control: \(path) missing")
                    continue
                }
                do {
                    let read = try await b.readBytes(path)
                    #expect(read == bytes, "seed \(seed): \(path) served other bytes (damaged: \(damaged))")
                    served += read == bytes ? 1 : 0
                } catch {
                    #expect(seed != 0, "control: \(path) failed: \(error)")
                }
            }
            if seed == 0 { #expect(served == written.count) }
            let grown = ResidentMemory.bytes() - rssBefore
            #expect(grown < 400 << 20, "seed \(seed): resident memory grew by \(grown >> 20) MiB (damaged: \(damaged))")
            return b
        }
        guard let b = joined else { return }

        // b goes on: its own new file reaches a third device.
        try await b.write("after.txt", "still working")
        try? await b.sync()
        let c = try await TestDevice(store: store, name: "c")
        #expect(try await c.read("after.txt") == "still working", "seed \(seed) (damaged: \(damaged))")
        await b.shutdown()
        await c.shutdown()
    }

    /// Overwrites `count` random objects of an S3 store; says which, and how.
    static func damage(_ store: any ContainerStore, count: Int, _ rng: inout SplitMix64) async throws -> [String] {
        var objects: [StoredObject] = []
        for prefix in [ContainerLayout.journalPrefix, ContainerLayout.blockPrefix, ContainerLayout.packPrefix, ContainerLayout.checkpointPrefix] {
            objects += try await store.listAllObjects(prefix: prefix)
        }
        objects.sort { $0.key < $1.key }
        var said: [String] = []
        for _ in 0..<count where !objects.isEmpty {
            let object = objects.remove(at: Int(rng.next() % UInt64(objects.count)))
            let bytes = try await store.get(object.key)
            let limit = ContainerLayout.largestObject(atKey: object.key)
            var damage = [Damage.huge, .garbage, .half][Int(rng.next() % 3)]
            // Past the limit of a checkpoint is 576 MiB: garbage there instead.
            if damage == .huge && limit > 100 << 20 { damage = .garbage }
            switch damage {
            case .huge:
                try await store.put(object.key, bytes + [UInt8](repeating: 0x20, count: Int(limit) + 1 - bytes.count))
            case .half: try await store.put(object.key, Array(bytes.prefix(bytes.count / 2)))
            default: try await store.put(object.key, (0..<max(bytes.count, 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            }
            said.append("\(object.key): \(damage)")
        }
        return said
    }

    /// Replaces `count` random objects; says which, and how.
    static func damage(_ base: String, outside: String, count: Int, _ rng: inout SplitMix64) throws -> [String] {
        var objects: [String] = []
        for folder in ["journal", "blocks", "packs", "checkpoints"] {
            guard let walker = FileManager.default.enumerator(atPath: base + "/" + folder) else { continue }
            while let relative = walker.nextObject() as? String {
                var info = stat()
                if lstat(base + "/" + folder + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                    objects.append(folder + "/" + relative)
                }
            }
        }
        objects.sort()
        var said: [String] = []
        for _ in 0..<count where !objects.isEmpty {
            let key = objects.remove(at: Int(rng.next() % UInt64(objects.count)))
            let path = base + "/" + key
            let damage = Damage.allCases[Int(rng.next() % UInt64(Damage.allCases.count))]
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            try FileManager.default.removeItem(atPath: path)
            switch damage {
            case .symlinkOut: try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside + "/secret")
            case .fifo: _ = mkfifo(path, 0o644)
            case .folder: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            case .huge:
                _ = FileManager.default.createFile(atPath: path, contents: bytes)
                _ = truncate(path, off_t(ContainerLayout.largestObject(atKey: key) + 1))
            case .garbage:
                _ = FileManager.default.createFile(atPath: path, contents: Data((0..<max(bytes.count, 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
            case .half: _ = FileManager.default.createFile(atPath: path, contents: bytes.prefix(bytes.count / 2))
            }
            said.append("\(key): \(damage)")
        }
        return said
    }

    static func expectOutsideUntouched(_ outside: String) throws {
        #expect(try String(contentsOfFile: outside + "/secret", encoding: .utf8) == "secret")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).sorted() == ["folder", "secret"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside + "/folder").isEmpty)
    }
}
