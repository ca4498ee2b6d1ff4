import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import GRDB
import Glibc
import ItemModel
import MetadataStore
import Testing

/// A damaged state database: quarantined, rebuilt from the store, and every byte that
/// was only on this device copied back into the tree. Nothing is deleted.
@Suite struct StateRecoveryTests {
    /// A device with one uploaded file and two changes made while the store was away, stopped.
    private func deviceWithUnsyncedWork(_ store: InMemoryStore) async throws -> String {
        let link = FaultyStore(store, faults: StoreFaults())
        let device = try await TestDevice(store: link, name: "a")
        try device.mkdir("docs")
        try await device.write("docs/kept.txt", "uploaded")
        try await device.sync()
        link.faults = try StoreFaults(parsing: "errors=1")
        try await device.write("docs/draft.txt", "only on this device")
        try await device.write("docs/kept.txt", "edited, not uploaded")
        await device.shutdown()
        // Everything in the main file, as after a clean stop.
        let queue = try DatabaseQueue(path: device.stateDir + "/state.db")
        try await queue.writeWithoutTransaction { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        return device.stateDir
    }

    /// Overwrites one page of the database file with noise.
    private func damagePage(of table: String, in stateDir: String) throws {
        let path = stateDir + "/state.db"
        let (page, size) = try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [table])!,
             try Int.fetchOne(db, sql: "PRAGMA page_size")!)
        }
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        let noise = [UInt8](repeating: 0xA5, count: size)
        #expect(pwrite(fd, noise, size, off_t((page - 1) * size)) == size)
    }

    private func quarantines(_ stateDir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: stateDir + "/quarantine").map { stateDir + "/quarantine/" + $0 }
    }

    @Test func aDamagedTableIsQuarantinedAndUnsyncedContentComesBackAtItsPath() async throws {
        let store = InMemoryStore()
        let stateDir = try await deviceWithUnsyncedWork(store)
        try damagePage(of: "setting", in: stateDir)
        guard case .damaged = try DatabaseHealth.check(path: stateDir + "/state.db") else {
            Issue.record("quick_check did not see the damage")
            return
        }

        let device = try await TestDevice(store: store, name: "a", stateDir: stateDir)
        let tree = try await device.tree()
        let top = try #require(tree.keys.first { $0.hasPrefix("ubiqfs recovered ") && !$0.contains("/") })
        // The store's version where it was; this device's unsynced versions under the recovery folder.
        #expect(tree["docs/kept.txt"] == "uploaded")
        #expect(tree["docs/draft.txt"] == nil)
        #expect(tree[top + "/docs/draft.txt"] == "only on this device")
        #expect(tree[top + "/docs/kept.txt"] == "edited, not uploaded")
        #expect(tree.count == 6)

        // The damaged database and the old cache are kept; the recovery is complete.
        let quarantine = try #require(try quarantines(stateDir).first)
        #expect(FileManager.default.fileExists(atPath: quarantine + "/state.db"))
        #expect(FileManager.default.fileExists(atPath: quarantine + "/cache"))
        #expect(!FileManager.default.fileExists(atPath: quarantine + "/pending"))
        #expect(try DatabaseHealth.check(path: stateDir + "/state.db") == .healthy)

        // The recovered files are ordinary new files: they reach the other devices.
        try await device.sync()
        let other = try await TestDevice(store: store, name: "b")
        #expect(try await other.read(top + "/docs/draft.txt") == "only on this device")

        // A restart recovers nothing twice.
        await device.shutdown()
        let again = try await TestDevice(store: store, name: "a", stateDir: stateDir)
        #expect(try await again.tree() == tree)
        await again.shutdown()
        await other.shutdown()
    }

    @Test func anUnreadableDatabaseLosesNoCachedContent() async throws {
        let store = InMemoryStore()
        let stateDir = try await deviceWithUnsyncedWork(store)
        // The header gone: SQLite does not even see a database, so nothing can be salvaged.
        let fd = open(stateDir + "/state.db", O_WRONLY)
        #expect(pwrite(fd, [UInt8](repeating: 0, count: 100), 100, 0) == 100)
        close(fd)

        let device = try await TestDevice(store: store, name: "a", stateDir: stateDir)
        let tree = try await device.tree()
        #expect(tree["docs/kept.txt"] == "uploaded")
        // Without names every cached file comes back, under a name that says what it is.
        let recovered = tree.filter { $0.key.hasPrefix("ubiqfs recovered ") && $0.key.contains("/unknown item ") }
        #expect(Set(recovered.values) == ["only on this device", "edited, not uploaded"])
        await device.shutdown()
    }

    @Test func recoveryResumesWhenTheStoreWasAwayAtFirst() async throws {
        let store = InMemoryStore()
        let stateDir = try await deviceWithUnsyncedWork(store)
        try damagePage(of: "setting", in: stateDir)
        let away = FaultyStore(store, faults: try StoreFaults(parsing: "errors=1"))
        await #expect(throws: (any Error).self) {
            _ = try await TestDevice(store: away, name: "a", stateDir: stateDir)
        }
        // Set aside and waiting, not lost.
        let quarantine = try #require(try quarantines(stateDir).first)
        #expect(FileManager.default.fileExists(atPath: quarantine + "/pending"))

        let device = try await TestDevice(store: store, name: "a", stateDir: stateDir)
        let tree = try await device.tree()
        #expect(tree.contains { $0.key.hasSuffix("/docs/draft.txt") && $0.value == "only on this device" })
        #expect(try quarantines(stateDir).count == 1)
        #expect(!FileManager.default.fileExists(atPath: quarantine + "/pending"))
        await device.shutdown()
    }

    @Test func aHealthyOrNewDatabaseIsLeftAlone() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-health-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(try DatabaseHealth.check(path: dir + "/state.db") == .missing)
        _ = try MetadataStore(path: dir + "/state.db")
        #expect(try DatabaseHealth.check(path: dir + "/state.db") == .healthy)
        #expect(try StateRecovery.quarantineIfDamaged(stateDir: dir, logger: .init(label: "test")) == nil)
        #expect(!FileManager.default.fileExists(atPath: dir + "/quarantine"))
    }
}
