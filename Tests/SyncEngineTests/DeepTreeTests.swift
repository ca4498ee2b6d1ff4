import ContainerStore
import DeviceFixture
import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore
@testable import SyncEngine
import Synchronization
import Testing

/// Trees as deep as programs make them (`mkdir` in a loop goes past PATH_MAX): pushing,
/// applying and trashing them costs their size, not their size times their depth, and
/// nothing gives up at some depth.
@Suite struct DeepTreeTests {
    /// A chain of `depth` folders named "d" made on the device; the inodes from the top.
    static func chain(on device: TestDevice, depth: Int) throws -> [Inode] {
        var chain: [Inode] = []
        for _ in 0..<depth {
            chain.append(try device.core.mkdir(parent: chain.last ?? .root, name: Array("d".utf8), mode: 0o755, caller: TestDevice.caller).ino)
        }
        return chain
    }

    /// `rm -rf`: deepest first.
    static func removeChain(_ chain: [Inode], on device: TestDevice) throws {
        for index in chain.indices.reversed() {
            try device.core.unlink(parent: index == 0 ? .root : chain[index - 1], name: Array("d".utf8), directory: true)
        }
    }

    /// The statements the device's writer connection runs during `body` (the pushes'
    /// commits and every record applied run there): a count that does not depend on the
    /// machine's speed.
    static func statements(on device: TestDevice, during body: () async throws -> Void) async throws -> Int {
        let count = Mutex(0)
        try await device.metadata.write { db in db.trace(options: .statement) { _ in count.withLock { $0 += 1 } } }
        try await body()
        try await device.metadata.write { db in db.trace(options: .statement, nil) }
        return count.withLock { $0 }
    }

    /// Before, each folder's delete walked to the root to find its trash folder, and the
    /// push and the applying device each took (depth x depth / 2) reads: 4x deeper cost
    /// 16x more. The ratio of 4x deeper is held under 5 (linear plus a little per record).
    @Test func deletingADeepTreeCostsItsSize() async throws {
        var counts: [Int: (push: Int, apply: Int)] = [:]
        for depth in [500, 2000] {
            let store = InMemoryStore()
            let a = try await TestDevice(store: store, name: "a")
            let b = try await TestDevice(store: store, name: "b")
            let chain = try Self.chain(on: a, depth: depth)
            try await a.sync()
            try await b.sync()
            #expect(b.inode(Array(repeating: "d", count: depth).joined(separator: "/")) != nil)
            try Self.removeChain(chain, on: a)
            let push = try await Self.statements(on: a) { try await a.sync() }
            let apply = try await Self.statements(on: b) { try await b.sync() }
            counts[depth] = (push, apply)
            #expect(try await b.tree().isEmpty)
            // The whole tree is one trash entry, restorable as it was.
            let entries = try await b.metadata.read { db in try TrashEntries.after(0, db) }
            #expect(entries.count == 1)
            #expect(entries.first?.items.count == depth)
            for device in [a, b] { await device.shutdown() }
        }
        let (small, large) = (try #require(counts[500]), try #require(counts[2000]))
        #expect(Double(large.push) / Double(small.push) < 5, "push: \(small.push) then \(large.push) statements")
        #expect(Double(large.apply) / Double(small.apply) < 5, "apply: \(small.apply) then \(large.apply) statements")
    }

    /// The order of a push used to count depths up to 10,000 only: past it, folders were
    /// deleted in any order, a folder before what was in it.
    @Test func aChainDeeperThanTenThousandIsOrderedByItsRealDepth() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let depth = 10_100
        let chain = try Self.chain(on: a, depth: depth)
        let created = try await a.metadata.read { db in try PushPlan.order(rows: ItemRow.dirtyRows(db), db) }
        let parentsFirst = created.ordered.map(\.inode) == chain
        #expect(parentsFirst)
        try await a.sync()
        try Self.removeChain(chain, on: a)
        let deleted = try await a.metadata.read { db in try PushPlan.order(rows: ItemRow.dirtyRows(db), db) }
        let deepestFirst = deleted.ordered.map(\.inode) == chain.reversed()
        #expect(deepestFirst)
        await a.shutdown()
    }

    /// Another client's record deletes only the top of a deep tree: everything beneath goes
    /// with it, into one trash entry. Before, each item inside walked up to the top to learn
    /// whether it was committed there: 4x deeper cost 16x more.
    @Test func aRecordDeletingOnlyTheTopTakesTheWholeTreeAtTheCostOfItsSize() async throws {
        var counts: [Int: Int] = [:]
        for depth in [300, 1200] {
            let store = InMemoryStore()
            let a = try await TestDevice(store: store, name: "a")
            let chain = try Self.chain(on: a, depth: depth)
            try await a.write("elsewhere.txt", "unrelated")
            try await a.sync()
            let top = try #require(try await a.metadata.read { db in try ItemRow.find(ino: chain[0], db)?.itemID })
            let seq = await a.engine.status().lastSeq + 1
            let record = JournalRecord(device: "other", deviceName: "other", commit: "x", time: 1, ops: [.delete(top)])
            #expect(try await store.putIfAbsent(ContainerLayout.journalKey(seq), RecordCodec.encode(record)))
            counts[depth] = try await Self.statements(on: a) { try await a.sync() }
            #expect(try await a.tree() == ["elsewhere.txt": "unrelated"])
            let entries = try await a.metadata.read { db in try TrashEntries.after(0, db) }
            #expect(entries.map(\.items.count) == [depth])
            #expect(try await a.metadata.read { db in try BaseSnapshots.all(db).count } == 1)
            await a.shutdown()
        }
        let (small, large) = (try #require(counts[300]), try #require(counts[1200]))
        #expect(Double(large) / Double(small) < 5, "\(small) then \(large) statements")
    }
}
