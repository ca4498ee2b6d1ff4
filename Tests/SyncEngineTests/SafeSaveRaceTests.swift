import ContainerStore
import DeviceFixture
import Foundation
import ItemModel
import Synchronization
import Testing

/// A safe save whose new file is being committed as the program renames it over the
/// original: the rename gives the new content the original's identity, so the item the
/// commit made must go from the store again, or every other device keeps the temp file.
@Suite struct SafeSaveRaceTests {
    @Test func aTempFileRenamedOverTheOriginalWhileItIsCommittedLeavesNothingBehind() async throws {
        let store = InMemoryStore()
        let hooked = HookedCommits(store)
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
