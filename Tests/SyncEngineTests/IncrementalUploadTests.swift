import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import ItemModel
import SeaweedFSFixture
@testable import SyncEngine
import Testing

/// Writes to a large file are followed from its last commit (`WrittenRanges`), so its next
/// upload reads only around them (`IncrementalCutting`) and cuts exactly as a whole read
/// would; after a restart (nothing followed) the whole file is read again, the control
/// that the count of bytes read is fair.
@Suite struct IncrementalUploadTests {
    static let seed = ProcessInfo.processInfo.environment["UBIQFS_INCREMENTAL_SEED"].flatMap(UInt64.init) ?? 41

    static func bytesRead(_ device: TestDevice) async -> Int64 {
        await device.engine.uploader.bytesRead.total
    }

    /// Writes `bytes` at `offset` through the filesystem, as a program does.
    static func write(_ device: TestDevice, _ path: String, _ bytes: [UInt8], at offset: Int) async throws {
        let handle = try await device.open(try #require(device.inode(path)), flags: O_WRONLY)
        _ = try bytes.withUnsafeBytes { try device.core.write(handle: handle, data: $0, offset: Int64(offset)) }
        device.core.release(handle: handle)
    }

    static func truncate(_ device: TestDevice, _ path: String, to size: Int) async throws {
        _ = try await device.core.setAttributes(try #require(device.inode(path)), AttributeChanges(size: Int64(size)), handle: nil)
    }

    /// A device of `format`: in format 4 files are cut coarse, in format 5 the test's
    /// files are databases, cut fine (`FileCuttings`).
    static func device(_ store: InMemoryStore, _ name: String, format: Int, stateDir: String? = nil) async throws -> TestDevice {
        var configuration = SyncConfiguration()
        configuration.newestFormat = format
        return try await TestDevice(store: store, name: name, stateDir: stateDir, configuration: configuration)
    }

    static func content(_ count: Int, seed: UInt64, format: Int) -> [UInt8] {
        let bytes = ChunkPackingTests.random(count, seed: seed)
        return format >= 5 ? FileCuttings.sqliteHeader + bytes.dropFirst(FileCuttings.sqliteHeader.count) : bytes
    }

    /// The file's committed blocks end where the whole content's cuts are (fine from
    /// format 5: the test's files are databases there).
    static func expectCutAsWhole(_ device: TestDevice, _ path: String, _ content: [UInt8], _ what: String, format: Int) async throws {
        let cuttings = try FileCuttings(info: ContainerInfo(id: "x", created: 0), cipher: nil)
        let cutting = format >= 5 ? try #require(cuttings.fine) : cuttings.coarse
        let ends = ChunkedUploadTests.ends(try await ChunkedUploadTests.lengths(device, path))
        #expect(ends == cutting.cuts(of: content), "\(what): cut otherwise than the whole content")
    }

    /// 4 KiB written in the middle of 48 MiB, then 100 KiB appended, then the file cut by
    /// 10 MiB and 1 MiB written at its new end: each upload reads a few MiB, cuts as the
    /// whole content, and another device reads it exactly. After a restart, the same kind
    /// of write reads the whole file (the control).
    @Test(arguments: [4, 5]) func writesToALargeFileAreReadBackAroundThemOnly(format: Int) async throws {
        try await ResidentMemory.exclusive {
            let store = InMemoryStore()
            let stateDir = try TemporaryDirectories.make("ubiqfs-incremental")
            var a = try await Self.device(store, "a", format: format, stateDir: stateDir)
            var content = Self.content(48 << 20, seed: Self.seed, format: format)
            try await a.write("disk.img", content)
            try await a.sync()
            var rng = SplitMix64(seed: Self.seed)
            let edits: [(String, (inout [UInt8]) -> (offset: Int, bytes: [UInt8])?)] = [
                ("4 KiB in the middle", { _ in (24 << 20, (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }) }),
                ("100 KiB appended", { content in (content.count, (0..<(100 << 10)).map { _ in UInt8.random(in: 0...255, using: &rng) }) }),
                ("cut by 10 MiB", { content in
                    content.removeLast(10 << 20)
                    return nil
                }),
                ("1 MiB at the new end", { content in (content.count, (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &rng) }) }),
            ]
            for (what, edit) in edits {
                let before = await Self.bytesRead(a)
                if let (offset, bytes) = edit(&content) {
                    try await Self.write(a, "disk.img", bytes, at: offset)
                    content.replaceSubrange(offset..<min(offset + bytes.count, content.count), with: bytes)
                } else {
                    try await Self.truncate(a, "disk.img", to: content.count)
                }
                try await a.sync()
                let read = await Self.bytesRead(a) - before
                #expect(read > 0 && read <= 16 << 20, "\(what): read \(read >> 20) MiB of \(content.count >> 20)")
                print("IncrementalUploadTests: format \(format): \(what): \(read) bytes read of \(content.count)")
                try await Self.expectCutAsWhole(a, "disk.img", content, "format \(format): \(what)", format: format)
            }
            let b = try await Self.device(store, "b", format: format)
            #expect(try await b.readBytes("disk.img") == content)

            await a.shutdown()
            a = try await Self.device(store, "a", format: format, stateDir: stateDir)
            let before = await Self.bytesRead(a)
            try await Self.write(a, "disk.img", Array("after a restart".utf8), at: 20 << 20)
            content.replaceSubrange((20 << 20)..<((20 << 20) + 15), with: Array("after a restart".utf8))
            try await a.sync()
            #expect(await Self.bytesRead(a) - before == Int64(content.count), "the control: a restart forgets what was written")
            try await b.sync()
            #expect(try await b.readBytes("disk.img") == content)
            for device in [a, b] { await device.shutdown() }
        }
    }

    /// Random writes, appends and truncates of a large file, synced after a few each
    /// (seeded: UBIQFS_INCREMENTAL_SEED replays one), against the content kept in memory:
    /// every upload cuts as the whole content would, and a new device reads it exactly.
    @Test(arguments: [4, 5]) func randomEditsCutAsTheWholeContentWould(format: Int) async throws {
        try await ResidentMemory.exclusive {
            let store = InMemoryStore()
            let a = try await Self.device(store, "a", format: format)
            var rng = SplitMix64(seed: Self.seed &+ 1)
            var content = Self.content(12 << 20, seed: Self.seed &+ 2, format: format)
            try await a.write("f.bin", content)
            try await a.sync()
            var (uploads, readLess) = (0, 0)
            for round in 0..<12 {
                for _ in 0..<(1 + rng.below(3)) {
                    switch rng.below(4) {
                    case 0, 1:
                        let offset = rng.below(content.count)
                        let bytes = (0..<(1 + rng.below(64 << 10))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                        try await Self.write(a, "f.bin", bytes, at: offset)
                        if offset + bytes.count > content.count { content += [UInt8](repeating: 0, count: offset + bytes.count - content.count) }
                        content.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
                    case 2:
                        let bytes = (0..<(1 + rng.below(512 << 10))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                        try await Self.write(a, "f.bin", bytes, at: content.count)
                        content += bytes
                    default:
                        let size = (2 << 20) + rng.below(content.count)
                        try await Self.truncate(a, "f.bin", to: size)
                        content = size < content.count ? Array(content.prefix(size)) : content + [UInt8](repeating: 0, count: size - content.count)
                    }
                }
                let before = await Self.bytesRead(a)
                try await a.sync()
                let read = await Self.bytesRead(a) - before
                uploads += 1
                readLess += read < content.count ? 1 : 0
                try await Self.expectCutAsWhole(a, "f.bin", content, "format \(format), seed \(Self.seed), round \(round)", format: format)
            }
            print("IncrementalUploadTests: seed \(Self.seed): \(readLess) of \(uploads) uploads read less than the file")
            #expect(readLess >= uploads / 2, "seed \(Self.seed): only \(readLess) of \(uploads) uploads read less than the file")
            let b = try await Self.device(store, "b", format: format)
            #expect(try await b.readBytes("f.bin") == content, "seed \(Self.seed)")
            for device in [a, b] { await device.shutdown() }
        }
    }
}
