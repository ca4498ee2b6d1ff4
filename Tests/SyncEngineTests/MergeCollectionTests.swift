import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import MetadataStore
@testable import SyncEngine
import Testing

/// An edit kept for a merge is stored before the record that names it: a collector of
/// another device that lists the store meanwhile condemns it as named by nothing. The
/// record that commits the merge names no condemned object (rule W): the edit is fetched
/// while it is still there and stored anew, and stays restorable after the sweep.
@Suite struct MergeCollectionTests {
    @Test func anEditKeptForAMergeThatACollectorCondemnedIsStoredAnew() async throws {
        let store = InMemoryStore()
        let configuration = CollectionTests.formatTwo(grace: .seconds(3))
        let a = try await TestDevice(store: store, name: "a", configuration: configuration)
        // b's commits land only after the sweep, which cannot rescue what they name.
        let link = FaultyStore(CollectionTests.lateCommits(store), faults: StoreFaults())
        let b = try await TestDevice(store: link, name: "b", configuration: configuration)
        let change = try await MergeRestartTests.heldMerge(a, b, link: link)
        try await MergeRestartTests().keepEdit(b, change: change)
        let input = try #require(try await b.metadata.read { db in try PendingMerges.find(change.itemID, db) }?.note.inputs.first)
        let inputKeys = Set(input.blocks.compactMap(ContainerLayout.objectKey(of:)))

        let collection = Task { try await a.engine.collect(grace: .seconds(3)) }
        try await CollectionTests.waitForList(store)
        var condemned: Set<String> = []
        for key in store.keys where key.hasSuffix(".condemned") {
            condemned.formUnion(try RecordCodec.decode(CondemnedList.self, from: try await store.get(key)).keys)
        }
        #expect(!inputKeys.isDisjoint(with: condemned), "the collector did not condemn the kept edit: the case is not met")
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
