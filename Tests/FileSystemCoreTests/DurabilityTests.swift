import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import Inodes
import SyncEngine
import Synchronization
import Testing

/// fsync is the promise (SEMANTICS, issue 34): fsync and fsyncdir make the state
/// database sync its log, after the file's own content; the first change to a committed
/// file is marked on disk before its bytes change; concurrent fsyncs share a database
/// sync. Checked with a trace of this process's system calls, not with the code's word.
@Suite(.serialized) struct DurabilityTests {
    /// Lines of the trace that sync the device's state database's log (other tests'
    /// devices in this process sync theirs meanwhile).
    static func walSyncs(_ lines: [String], of device: TestDevice) -> [Int] {
        lines.indices.filter { isSync(lines[$0]) && lines[$0].contains("<\(device.stateDir)/state.db-wal>") }
    }

    static func isSync(_ line: String) -> Bool {
        line.contains("fsync(") || line.contains("fdatasync(")
    }

    static func touches(_ line: String, cacheOf ino: Inode, in device: TestDevice) -> Bool {
        line.contains("<\(device.stateDir)/cache/\(ino.rawValue)>")
    }

    @Test func fsyncOfAFileSyncsItsContentThenTheDatabase() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        let (entry, handle) = try device.core.create(parent: Inode.root, name: Array("doc".utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller)
        _ = try Array("promised".utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 0) }
        let lines = try await SyscallTrace.of("fsync,fdatasync") { try device.core.fsync(handle: handle) }
        device.core.release(handle: handle)
        let content = lines.firstIndex { Self.isSync($0) && Self.touches($0, cacheOf: entry.ino, in: device) }
        let database = Self.walSyncs(lines, of: device).last
        #expect(content != nil, "the cache file was not synced: \(lines)")
        #expect(database != nil, "the state database's log was not synced: \(lines)")
        if let content, let database { #expect(content < database, "the database was synced before the content it names: \(lines)") }
        await device.shutdown()
    }

    @Test func fsyncOfAFolderSyncsTheDatabase() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        try device.mkdir("folder")
        try await device.write("folder/new", "x")
        try device.rename("folder/new", "folder/renamed")
        let folder = try #require(device.inode("folder"))
        let lines = try await SyscallTrace.of("fsync,fdatasync") { try device.core.fsyncDirectory(folder) }
        #expect(!Self.walSyncs(lines, of: device).isEmpty, "the state database's log was not synced: \(lines)")
        await device.shutdown()
    }

    /// Else a power cut could keep the new bytes and lose the mark: the change would
    /// never be uploaded, and the other devices would keep the old version for ever.
    @Test func theFirstWriteToACommittedFileIsMarkedOnDiskBeforeItsBytes() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        try await device.write("db", String(repeating: "a", count: 5000))
        try await device.sync()
        let ino = try #require(device.inode("db"))
        let handle = try await device.open(ino, flags: O_WRONLY)
        let lines = try await SyscallTrace.of("fsync,fdatasync,pwrite64") {
            _ = try Array("b".utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 100) }
            _ = try Array("c".utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: 200) }
        }
        device.core.release(handle: handle)
        let writes = lines.indices.filter { lines[$0].contains("pwrite64(") && Self.touches(lines[$0], cacheOf: ino, in: device) }
        let syncs = Self.walSyncs(lines, of: device)
        #expect(writes.count == 2, "\(lines)")
        #expect(syncs.count == 1, "one database sync for the first write only: \(lines)")
        if let first = writes.first, let sync = syncs.first { #expect(sync < first, "the bytes changed before the mark was on disk: \(lines)") }
        #expect(try await device.readBytes("db")[100] == UInt8(ascii: "b"))
        await device.shutdown()
    }

    /// Write-only opens go around the page cache, where the kernel sends no fsync after an
    /// O_SYNC or O_DSYNC write (it does on the cached path): each such write syncs here.
    @Test func anODsyncWriteAroundThePageCacheSyncsTheDatabase() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        device.core.openWriteOnlyDirect(true)
        try await device.write("log", "start\n")
        let ino = try #require(device.inode("log"))
        for (flags, expected) in [(O_WRONLY | O_DSYNC, 2), (O_WRONLY | O_SYNC, 2), (O_WRONLY, 0)] {
            let handle = try await device.open(ino, flags: flags)
            let lines = try await SyscallTrace.of("fsync,fdatasync") {
                for offset in [6, 12] {
                    _ = try Array("entry\n".utf8).withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: Int64(offset)) }
                }
            }
            device.core.release(handle: handle)
            #expect(Self.walSyncs(lines, of: device).count == expected, "flags \(String(flags, radix: 8)): \(lines)")
        }
        await device.shutdown()
    }

    /// Removed first, a power cut could undo the delete and keep the removal: the file
    /// would come back empty. The content goes once a database sync covers the delete
    /// (here a program's fsync of the folder; else the engine's, `removalDelay` after).
    @Test func aDeletedFilesContentGoesOnlyAfterItsDeleteIsOnDisk() async throws {
        var configuration = SyncConfiguration()
        configuration.removalDelay = .seconds(3600)
        let device = try await TestDevice(store: InMemoryStore(), name: "a", configuration: configuration)
        try await device.write("doc", String(repeating: "d", count: 5000))
        try await device.sync()
        let ino = try #require(device.inode("doc"))
        let sizeBeforeSync = Mutex<Int64?>(nil)
        let lines = try await SyscallTrace.of("fsync,fdatasync,unlink,unlinkat") {
            try device.remove("doc")
            device.core.forget(ino, count: .max)
            sizeBeforeSync.withLock { $0 = device.cache.status(ino)?.size }
            try device.core.fsyncDirectory(Inode.root)
        }
        #expect(sizeBeforeSync.withLock { $0 } == 5000, "removed before the delete was on disk")
        #expect(device.cache.status(ino) == nil)
        let removal = lines.firstIndex { $0.contains("unlink") && $0.contains("\(device.stateDir)/cache/\(ino.rawValue)") }
        let sync = Self.walSyncs(lines, of: device).first
        #expect(removal != nil && sync != nil, "\(lines)")
        if let removal, let sync { #expect(sync < removal, "the content went before its delete was on disk: \(lines)") }
        await device.shutdown()
    }

    /// Eight fsyncs that arrive while the database is busy are served by one sync (at
    /// most two, should one reach the writer after the first began), not eight.
    @Test func concurrentFsyncsShareOneDatabaseSync() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        try await device.write("file", "x")
        let (lines, failures) = try await Self.eightFsyncsBehindABusyWriter(device)
        #expect(failures.isEmpty)
        let syncs = Self.walSyncs(lines, of: device).count
        #expect(syncs >= 1 && syncs <= 2, "\(syncs) database syncs for 8 concurrent fsyncs: \(lines)")
        await device.shutdown()
    }

    /// Threads of their own, as libfuse's workers are (a dispatch queue may run them one
    /// after another on two cores), traced alone; the writer stays busy until all eight
    /// have called fsync (and a second longer, so they queue for it), however slowly a
    /// loaded machine starts their threads. Runs off the cooperative pool.
    static func eightFsyncsBehindABusyWriter(_ device: TestDevice) async throws -> (lines: [String], failures: [String]) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                let failures = Mutex<[String]>([])
                let threads = Mutex<[pid_t]>([])
                let go = Atomic<Bool>(false)
                let arrived = Atomic<Int>(0)
                let done = Atomic<Int>(0)
                let busy = Thread {
                    _ = try? device.metadata.write { _ in
                        let deadline = Date().addingTimeInterval(60)
                        while arrived.load(ordering: .relaxed) < 8 && Date() < deadline { usleep(1000) }
                        usleep(1_000_000)
                    }
                }
                busy.start()
                for _ in 0..<8 {
                    Thread {
                        threads.withLock { $0.append(SyscallTrace.currentThread()) }
                        while !go.load(ordering: .acquiring) { usleep(1000) }
                        arrived.add(1, ordering: .relaxed)
                        do { try device.core.fsyncDirectory(Inode.root) } catch { failures.withLock { $0.append("\(error)") } }
                        done.add(1, ordering: .releasing)
                    }.start()
                }
                while threads.withLock({ $0.count }) < 8 { usleep(1000) }
                let trace: SyscallTrace
                do { trace = try SyscallTrace("fsync,fdatasync", threads: threads.withLock { $0 }) } catch {
                    go.store(true, ordering: .releasing)
                    while done.load(ordering: .acquiring) < 8 { usleep(10_000) }
                    return continuation.resume(throwing: error)
                }
                go.store(true, ordering: .releasing)
                while done.load(ordering: .acquiring) < 8 { usleep(10_000) }
                continuation.resume(returning: (trace.stop(), failures.withLock { $0 }))
            }.start()
        }
    }
}
