import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import Synchronization
@testable import SyncEngine
import Testing

/// Rule W's first clause (docs/CONTAINER-FORMAT.md, W1) on a slow machine or store: a
/// commit's put follows a listing of what collectors condemned by at most a quarter of
/// the grace, and a listing that brought new keys since the push was checked sends it
/// back to plan again. A push that cannot meet it commits nothing and says so.
@Suite struct RuleWTests {
    /// A store whose listings of `gc/` take `delay` (a far store, a starved machine).
    final class SlowListingStore: ForwardingStore, Sendable {
        let base: any ContainerStore
        let delay = Mutex(Duration.zero)

        init(base: any ContainerStore) { self.base = base }

        func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
            let delay = self.delay.withLock { $0 }
            if prefix.hasPrefix(ContainerLayout.gcPrefix) && delay > .zero { try? await Task.sleep(for: delay) }
            return try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
        }
    }

    static func journalCount(_ store: InMemoryStore) -> Int {
        store.keys.filter { $0.hasPrefix(ContainerLayout.journalPrefix) }.count
    }

    /// Listing `gc/` takes longer than a quarter of the grace: no record may go, and
    /// `sync --wait` fails with why instead of returning as if all were pushed. Once the
    /// listing is quick again (the control), the same change goes out.
    @Test(.timeLimit(.minutes(10)))
    func aListingSlowerThanAQuarterOfTheGraceCommitsNothingAndSyncSaysSo() async throws {
        let base = InMemoryStore()
        let store = SlowListingStore(base: base)
        let a = try await TestDevice(store: store, name: "a", configuration: CollectionTests.formatTwo(grace: .milliseconds(800)))
        let records = Self.journalCount(base)
        store.delay.withLock { $0 = .milliseconds(250) }
        try await a.write("f.txt", "kept")
        do {
            try await a.sync()
            Issue.record("a sync said everything went out")
        } catch let error as SyncError {
            #expect(error.code == .busy && error.message.contains("stopped short"), "\(error)")
        }
        #expect(Self.journalCount(base) == records)
        // The file, and the root's time that its create moved.
        #expect(try await a.metadata.read { db in try ItemRow.pendingCount(db) } == 2)
        #expect(await a.engine.status().lastError?.contains("stopped short") == true)

        store.delay.withLock { $0 = .zero }
        try await a.sync()
        #expect(Self.journalCount(base) == records + 1)
        #expect(try await a.metadata.read { db in try ItemRow.pendingCount(db) } == 0)
        let b = try await TestDevice(store: base, name: "b", configuration: CollectionTests.formatTwo(grace: .milliseconds(800)))
        #expect(try await b.read("f.txt") == "kept")
        for device in [a, b] { await device.shutdown() }
    }

    /// A store on which a collector lists `packs/` right after the next pack is put, and
    /// condemns it (nothing names it yet).
    final class CondemningStore: ForwardingStore, Sendable {
        let base: any ContainerStore
        let armed = Mutex(false)
        let condemned = Mutex<String?>(nil)

        init(base: any ContainerStore) { self.base = base }

        func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) {
            try await base.put(key, bytes)
            let fire = key.hasPrefix(ContainerLayout.packPrefix) && armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            guard fire else { return }
            condemned.withLock { $0 = key }
            let list = CondemnedList(run: "collector", device: "collector", head: 1, created: Timestamp.now(), keys: [key], bytes: Int64(bytes.count))
            let encoded: [UInt8]
            do { encoded = try RecordCodec.encode(list) } catch { preconditionFailure("a list encodes") }
            try await base.put(ContainerLayout.gcPrefix + "collector.condemned", encoded)
        }
    }

    /// Pictures are stored at the start of a push; a collector that condemns their pack
    /// before the push lists `gc/` keeps them out of the record (W2): the record names no
    /// condemned object, and the pictures go in a fresh pack with the next record. Without
    /// the list (the control) they go in the first.
    @Test(arguments: [true, false])
    func picturesACollectorCondemnedWaitForAFreshPack(condemn: Bool) async throws {
        let base = InMemoryStore()
        let store = CondemningStore(base: base)
        let a = try await TestDevice(store: store, name: "a", configuration: CollectionTests.formatTwo(grace: CollectionTests.shortGrace))
        try await a.write("photo.jpg", String(repeating: "p", count: 300_000))
        try await a.sync()
        let ino = try #require(a.inode("photo.jpg"))
        let id = try #require(try await a.metadata.read { db in try ItemRow.find(ino: ino, db) }).itemID
        let png = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await a.metadata.write { db in
            let content = try #require(try BaseSnapshots.find(id, db)).blocks ?? []
            try MadeThumbnails.record(id, content: content, pictures: [256: png], db)
        }
        store.armed.withLock { $0 = condemn }
        let records = Self.journalCount(base)
        // The listing this push checks against is made after the pack's put.
        try await Task.sleep(for: CollectionTests.shortGrace / 2)
        try await a.sync()
        let thumbnails = try await a.metadata.read { db in try BaseSnapshots.find(id, db)?.thumbnails }
        let pack = try #require(thumbnails?.first?.blocks.first?.pack)
        #expect(try await a.metadata.read { db in try MadeThumbnails.items(db) }.isEmpty)
        if let condemned = store.condemned.withLock({ $0 }) {
            for key in base.keys where key.hasPrefix(ContainerLayout.journalPrefix) {
                let text = String(decoding: try await base.get(key), as: UTF8.self)
                #expect(!text.contains(String(condemned.dropFirst(ContainerLayout.packPrefix.count))), "\(key) names the condemned \(condemned)")
            }
            #expect(ContainerLayout.packKey(pack) != condemned && Self.journalCount(base) == records + 2)
        } else {
            #expect(!condemn && Self.journalCount(base) == records + 1)
        }
        await a.shutdown()
    }

    static func putList(_ store: InMemoryStore, run: String, keys: [String]) async throws {
        let list = CondemnedList(run: run, device: "collector", head: 1, created: Timestamp.now(), keys: keys, bytes: 1)
        try await store.put(ContainerLayout.gcPrefix + run + ".condemned", try RecordCodec.encode(list))
    }

    /// A list with new keys appearing after a push was checked makes `stillClear` false
    /// once the writer lists again; a listing with no new key (a list of keys already
    /// known, or lists gone) keeps it true. Within a quarter of the grace nothing is listed.
    @Test func aNewListSinceTheCheckSendsThePushBack() async throws {
        let store = InMemoryStore()
        let device = try await TestDevice(store: store, name: "a")
        let calls = SyncCalls(store: store, metadata: device.metadata, timeout: .seconds(60), reachability: StoreReachability())
        // A listing is fresh for a quarter of the grace: long enough here that a loaded
        // machine's stall between a listing and its check does not make it stale.
        let grace = Duration.seconds(8)
        let condemned = CondemnedObjects(grace: grace)
        try await Self.putList(store, run: "one", keys: ["blocks/aa"])
        let checked = try await condemned.listing(calls)
        #expect(checked.keys == ["blocks/aa"])
        #expect(try await condemned.stillClear(since: checked.generation, calls))

        try await Self.putList(store, run: "two", keys: ["blocks/bb"])
        try await Task.sleep(for: grace / 4)
        #expect(try await condemned.stillClear(since: checked.generation, calls) == false)
        #expect(condemned.contains("blocks/bb"))

        let second = try await condemned.listing(calls)
        try await Self.putList(store, run: "three", keys: ["blocks/aa"])
        try await store.delete(ContainerLayout.gcPrefix + "one.condemned")
        try await Task.sleep(for: grace / 4)
        #expect(try await condemned.stillClear(since: second.generation, calls))
        #expect(condemned.contains("blocks/aa") && condemned.contains("blocks/bb"))
        await device.shutdown()
    }
}
