import Foundation
import Synchronization
import Testing
import ContainerStore
import ItemModel

/// A commit written into a local store folder by someone else (another mount on this
/// machine) wakes a watcher at once; after `stop`, nothing does.
@Suite struct LocalFolderWatchTests {
    @Test func aCommitByAnotherWriterWakesTheWatcher() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-watch-\(UUID().uuidString)").path
        let mine = try LocalFolderStore(root: root, container: "c")
        let theirs = try LocalFolderStore(root: root, container: "c")
        let wakeUps = Atomic<Int>(0)
        let watch = try #require(mine.watch(prefix: ContainerLayout.journalPrefix) { wakeUps.add(1, ordering: .relaxed) })
        #expect(try await theirs.putIfAbsent(ContainerLayout.journalKey(1), Array("{}".utf8)))
        let deadline = ContinuousClock.now + .seconds(10)
        while wakeUps.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(wakeUps.load(ordering: .relaxed) > 0)
        watch.stop()
        try await Task.sleep(for: .milliseconds(100))
        let before = wakeUps.load(ordering: .relaxed)
        #expect(try await theirs.putIfAbsent(ContainerLayout.journalKey(2), Array("{}".utf8)))
        try await Task.sleep(for: .milliseconds(300))
        #expect(wakeUps.load(ordering: .relaxed) == before)
        // A store that cannot watch says so; its users poll.
        #expect(InMemoryStore().watch(prefix: ContainerLayout.journalPrefix) { } == nil)
    }
}
