@testable import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import Inodes
import Synchronization
import Testing

/// Access times as ext4 keeps them with `relatime` (the default), `strictatime` and
/// `noatime`: this device's own, moved by opens for reading and folder listings, kept in
/// memory between batches (no database write per read) and kept across a clean restart.
@Suite struct AccessTimeTests {
    static let day = AccessTimes.day

    /// The rule itself, on times chosen to isolate each case (as relatime_need_update).
    @Test func theRelatimeRule() {
        let times = AccessTimes(rule: .relatime)
        let now: Int64 = 100 * Self.day
        // Not after the last modification, or the last change: moves.
        #expect(times.access(1, atime: 10, mtime: 10, ctime: 5, folder: false, now: now))
        #expect(times.access(2, atime: 10, mtime: 5, ctime: 20, folder: false, now: now))
        // After both and less than a day old: stays.
        #expect(!times.access(3, atime: now - Self.day + 1, mtime: 5, ctime: 5, folder: false, now: now))
        // A day old: moves.
        #expect(times.access(4, atime: now - Self.day, mtime: 5, ctime: 5, folder: false, now: now))
        // What moved shows, and counts for the next access.
        #expect(times.current(1, stored: 10) == now)
        #expect(!times.access(1, atime: 10, mtime: 10, ctime: 5, folder: false, now: now + 1))
        // nodiratime leaves folders alone; noatime everything; strictatime moves each time.
        #expect(!AccessTimes(rule: .relatime, folders: false).access(5, atime: 1, mtime: 9, ctime: 9, folder: true, now: now))
        #expect(!AccessTimes(rule: .noatime).access(6, atime: 1, mtime: 9, ctime: 9, folder: false, now: now))
        let strict = AccessTimes(rule: .strictatime)
        #expect(strict.access(7, atime: now - 1, mtime: 5, ctime: 5, folder: false, now: now))
        #expect(strict.access(7, atime: now - 1, mtime: 5, ctime: 5, folder: false, now: now + 1))
    }

    static func atime(_ device: TestDevice, _ path: String) throws -> Int64 {
        try device.core.attributes(try #require(device.inode(path))).atime
    }

    static func read(_ device: TestDevice, _ path: String) async throws {
        _ = try await device.readBytes(path)
        try await Task.sleep(for: .milliseconds(2))
    }

    /// The statements the device's writer connection runs during `body`.
    static func writes(on device: TestDevice, during body: () async throws -> Void) async throws -> Int {
        let count = Mutex(0)
        try await device.metadata.write { db in db.trace(options: .statement) { _ in count.withLock { $0 += 1 } } }
        try await body()
        try await device.metadata.write { db in db.trace(options: .statement, nil) }
        return count.withLock { $0 }
    }

    @Test func readsMoveItByRelatimeWithNoWritePerReadAndItSurvivesARestart() async throws {
        let store = InMemoryStore()
        let device = try await TestDevice(store: store, name: "a")
        try device.mkdir("d")
        try await device.write("d/f.txt", "content")
        let created = try Self.atime(device, "d/f.txt")
        try await Task.sleep(for: .milliseconds(2))
        try await Self.read(device, "d/f.txt")
        let firstRead = try Self.atime(device, "d/f.txt")
        #expect(firstRead > created, "the first read after a write moves it")
        let none = try await Self.writes(on: device) {}
        let writes = try await Self.writes(on: device) {
            for _ in 0..<50 { try await Self.read(device, "d/f.txt") }
        }
        #expect(try Self.atime(device, "d/f.txt") == firstRead, "read again within a day: it stays")
        #expect(writes == none, "\(writes - none) statements for 50 reads")
        try await device.write("d/f.txt", "changed")
        try await Self.read(device, "d/f.txt")
        #expect(try Self.atime(device, "d/f.txt") > firstRead, "the first read after a change moves it")
        // A listing of a folder changed since it was last listed.
        let folder = try Self.atime(device, "d")
        _ = try device.core.list(try #require(device.inode("d")), after: 0, limit: 100)
        #expect(try Self.atime(device, "d") > folder)
        // touch -a sets it, even back in time; a read after that moves it again (relatime).
        let ino = try #require(device.inode("d/f.txt"))
        _ = try await device.core.setAttributes(ino, AttributeChanges(atime: .at(1_000_000_000)), handle: nil)
        #expect(try Self.atime(device, "d/f.txt") == 1_000_000_000)
        try await Self.read(device, "d/f.txt")
        let kept = try Self.atime(device, "d/f.txt")
        #expect(kept > 1_000_000_000)

        try await device.cleanStop()
        let again = try await TestDevice(store: store, name: "a", stateDir: device.stateDir)
        #expect(try Self.atime(again, "d/f.txt") == kept)
        await again.shutdown()
    }

    @Test(arguments: [AccessTimes.Rule.strictatime, .noatime]) func theOtherRules(rule: AccessTimes.Rule) async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a", accessTimes: AccessTimes(rule: rule))
        try await device.write("f.txt", "content")
        var last = try Self.atime(device, "f.txt")
        for _ in 0..<3 {
            try await Self.read(device, "f.txt")
            let now = try Self.atime(device, "f.txt")
            #expect(rule == .strictatime ? now > last : now == last)
            last = now
        }
        await device.shutdown()
    }
}
