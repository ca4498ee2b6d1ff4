import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Synchronization
@testable import SyncEngine
import Testing

/// A safe save whose new file is being committed as the program renames it over the
/// original: the rename gives the new content the original's identity, so the item the
/// commit made must go from the store again, or every other device keeps the temp file.
@Suite struct SafeSaveRaceTests {
    /// A store that runs `afterCommit` once, right after the next journal record is stored
    /// and before the committing device hears back.
    final class CommitHook: ContainerStore {
        let base: InMemoryStore
        private let hook = Mutex<(@Sendable () -> Void)?>(nil)
        init(_ base: InMemoryStore) { self.base = base }
        var displayName: String { "commit hook" }

        func afterNextCommit(_ body: @escaping @Sendable () -> Void) { hook.withLock { $0 = body } }

        func putIfAbsent(_ key: String, _ bytes: [UInt8]) async throws(StoreError) -> Bool {
            let stored = try await base.putIfAbsent(key, bytes)
            if stored && key.hasPrefix(ContainerLayout.journalPrefix) { hook.withLock { $0.take() }?() }
            return stored
        }
        func get(_ key: String, range: Range<Int64>?) async throws(StoreError) -> [UInt8] { try await base.get(key, range: range) }
        func put(_ key: String, _ bytes: [UInt8]) async throws(StoreError) { try await base.put(key, bytes) }
        func exists(_ key: String) async throws(StoreError) -> Bool { try await base.exists(key) }
        func list(prefix: String, startAfter: String?, limit: Int) async throws(StoreError) -> [String] {
            try await base.list(prefix: prefix, startAfter: startAfter, limit: limit)
        }
        func delete(_ key: String) async throws(StoreError) { try await base.delete(key) }
    }

    @Test func aTempFileRenamedOverTheOriginalWhileItIsCommittedLeavesNothingBehind() async throws {
        let store = InMemoryStore()
        let hooked = CommitHook(store)
        let a = try await TestDevice(store: hooked, name: "a")
        try await a.write("doc.txt", "version 1")
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        #expect(try await b.tree() == ["doc.txt": "version 1"])

        try await a.write(".doc.txt.swp", "version 2")
        let renamed = Mutex<(any Error)?>(nil)
        hooked.afterNextCommit {
            do { try a.rename(".doc.txt.swp", "doc.txt") } catch { renamed.withLock { $0 = error } }
        }
        try await a.sync()  // commits the temp file; the rename lands before it hears back
        #expect(renamed.withLock { $0 } == nil)
        #expect(a.inode(".doc.txt.swp") == nil)
        try await a.sync()
        #expect(await a.engine.status().pendingItems == 0)

        try await b.sync()
        #expect(try await b.tree() == ["doc.txt": "version 2"])
        let c = try await TestDevice(store: store, name: "c")
        #expect(try await c.tree() == ["doc.txt": "version 2"])
        #expect(try await a.tree() == ["doc.txt": "version 2"])
        await a.shutdown()
        await b.shutdown()
        await c.shutdown()
    }
}
