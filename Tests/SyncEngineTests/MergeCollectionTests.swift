import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
import Synchronization
@testable import SyncEngine
import Testing

/// An edit kept for a merge is stored before the record that names it: a collector of
/// another device that lists the store meanwhile condemns it as named by nothing. The
/// record that commits the merge names no condemned object (rule W): the edit is fetched
/// while it is still there and stored anew, and stays restorable after the sweep (without
/// that, the record names the condemned objects: the check of its blocks fails).
@Suite struct MergeCollectionTests {
    @Test func anEditKeptForAMergeThatACollectorCondemnedIsStoredAnew() async throws {
        let store = InMemoryStore()
        let configuration = CollectionTests.formatTwo(grace: .seconds(1))
        // a's sweep waits for b's commit: b meets the list, never a sweep half done, on
        // a machine however slow.
        let committed = Mutex(false)
        let sweeping = HookedCommits(store, beforeEachDelete: { key in
            guard key.hasPrefix(ContainerLayout.blockPrefix) || key.hasPrefix(ContainerLayout.packPrefix) else { return }
            for _ in 0..<6000 where !committed.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
        })
        let a = try await TestDevice(store: sweeping, name: "a", configuration: configuration)
        let committing = HookedCommits(store)
        let link = FaultyStore(committing, faults: StoreFaults())
        let b = try await TestDevice(store: link, name: "b", configuration: configuration)
        let change = try await MergeRestartTests.heldMerge(a, b, link: link)
        try await MergeRestartTests().keepEdit(b, change: change)
        let input = try #require(try await b.metadata.read { db in try PendingMerges.find(change.itemID, db) }?.note.inputs.first)
        let inputKeys = Set(input.blocks.compactMap(ContainerLayout.objectKey(of:)))

        let collection = Task { try await a.engine.collect(grace: .seconds(1)) }
        try await CollectionTests.waitForList(store)
        var condemned: Set<String> = []
        for key in store.keys where key.hasSuffix(".condemned") {
            condemned.formUnion(try RecordCodec.decode(CondemnedList.self, from: try await store.get(key)).keys)
        }
        #expect(!inputKeys.isDisjoint(with: condemned), "the collector did not condemn the kept edit: the case is not met")
        committing.afterNextCommit { committed.withLock { $0 = true } }
        try await b.sync()
        let report = try await collection.value
        #expect(report.deleted >= 1, "\(report)")

        let c = try await TestDevice(store: store, name: "c", configuration: configuration)
        #expect(try await c.read("notes.md") == MergeRestartTests.merged)
        let versions = try MergeTests.versions(c, "notes.md")
        let kept = try #require(versions.first { $0.input == 1 }, "\(versions.map(\.name))")
        #expect(Set(kept.blocks.compactMap(ContainerLayout.objectKey(of:))).isDisjoint(with: condemned))
        try await c.core.restore(try #require(c.inode("notes.md")), version: kept.seq, input: 1)
        #expect(try await c.read("notes.md") == MergeRestartTests.ours)
        for device in [a, b, c] { await device.shutdown() }
    }
}
