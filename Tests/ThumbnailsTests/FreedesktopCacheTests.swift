import Foundation
import Synchronization
import Testing
import Thumbnails

/// Installing, checking, moving and removing entries in a scratch cache.
@Suite struct FreedesktopCacheTests {
    static let uri = "file:///mnt/cloud/Holiday%202024/IMG_0001%20(1).jpg"
    static let md5 = "57cd9e29e5ac0c8bfe992713f910074a.png"
    static let other = "file:///mnt/cloud/other.jpg"

    @Test func sizesHaveTheirFolders() {
        #expect([128, 256, 512, 1024].map(FreedesktopCache.directoryName) == ["normal", "large", "x-large", "xx-large"])
        #expect(FreedesktopCache.fileName(uri: Self.uri) == Self.md5)
    }

    @Test func installWritesEachSizeWithItsKeysAndPrivateModes() throws {
        let scratch = try Scratch("install")
        let cache = FreedesktopCache(root: scratch.path + "/cache/thumbnails")
        let large = TestPNG.make(width: 256, height: 171), normal = TestPNG.make(width: 128, height: 85)
        try cache.install([256: large, 128: normal], uri: Self.uri, mtime: 1_700_000_000, size: 3_877_620)
        #expect(scratch.files() == ["cache/thumbnails/large/\(Self.md5)", "cache/thumbnails/normal/\(Self.md5)"])
        for folder in ["cache", "cache/thumbnails", "cache/thumbnails/large", "cache/thumbnails/normal"] {
            #expect(try scratch.mode(folder) == 0o700, "\(folder)")
        }
        #expect(try scratch.mode("cache/thumbnails/large/\(Self.md5)") == 0o600)
        let entry = try #require(cache.entry(uri: Self.uri, size: 256))
        #expect(try PNGText.text(entry) == ["Thumb::URI": Self.uri, "Thumb::MTime": "1700000000", "Thumb::Size": "3877620", "Software": "ubiqfs"])
        #expect(try PNGText.stripped(entry) == large)
        #expect(cache.isCurrent(uri: Self.uri, sizes: [256, 128], mtime: 1_700_000_000, size: 3_877_620))
        #expect(!cache.isCurrent(uri: Self.uri, sizes: [256, 128], mtime: 1_700_000_001, size: 3_877_620))
        #expect(!cache.isCurrent(uri: Self.uri, sizes: [256], mtime: 1_700_000_000, size: 3_877_621))
        #expect(!cache.isCurrent(uri: Self.uri, sizes: [512, 256], mtime: 1_700_000_000, size: 3_877_620))
        #expect(cache.entry(uri: Self.other, size: 256) == nil)
    }

    /// A replaced entry is a new file renamed over the old one: a reader holds the old inode
    /// or the new one, and no temporary file is left.
    @Test func installReplacesByRename() throws {
        let scratch = try Scratch("rename")
        let cache = FreedesktopCache(root: scratch.path)
        try cache.install([256: TestPNG.make(width: 200, height: 100)], uri: Self.uri, mtime: 1, size: 1)
        let before = try Self.inode(scratch.path + "/large/" + Self.md5)
        let reader = FileHandle(forReadingAtPath: scratch.path + "/large/" + Self.md5)
        defer { try? reader?.close() }
        try cache.install([256: TestPNG.make(width: 100, height: 200)], uri: Self.uri, mtime: 2, size: 2)
        #expect(try Self.inode(scratch.path + "/large/" + Self.md5) != before)
        // The open handle still reads the whole old entry.
        let old = try #require(reader?.readDataToEndOfFile())
        #expect(try PNGText.dimensions(Array(old)) == (width: 200, height: 100))
        #expect(scratch.files() == ["large/\(Self.md5)"])
    }

    /// While entries are rewritten again and again, a reader never sees part of one.
    @Test func readersNeverSeeAPartialEntry() async throws {
        let scratch = try Scratch("atomic")
        let cache = FreedesktopCache(root: scratch.path)
        // Small: CRC-32 is slow in a debug build, and a busy test slows every test running beside it.
        let pngs = [TestPNG.make(width: 64, height: 64), TestPNG.make(width: 10, height: 10)]
        try cache.install([256: pngs[0]], uri: Self.uri, mtime: 0, size: 0)
        let done = Flag()
        let writer = Task.detached {
            defer { done.set() }
            for round in 1...200 { try cache.install([256: pngs[round % 2]], uri: Self.uri, mtime: Int64(round), size: 0) }
        }
        var reads = 0
        while !done.isSet || reads < 100 {
            let entry = try #require(cache.entry(uri: Self.uri, size: 256))
            #expect(throws: Never.self) { try PNGText.text(entry) }
            reads += 1
            if reads % 100 == 0 { await Task.yield() }
        }
        try await writer.value
        #expect(scratch.files() == ["large/\(Self.md5)"])
    }

    @Test func installDeletesOtherSizesAndFailEntriesOfThatURIOnly() throws {
        let scratch = try Scratch("others")
        let cache = FreedesktopCache(root: scratch.path)
        let otherMD5 = FreedesktopCache.fileName(uri: Self.other)
        for path in ["xx-large/\(Self.md5)", "x-large/\(Self.md5)", "xx-large/\(otherMD5)", "fail/gnome-thumbnail-factory/\(Self.md5)",
                     "fail/some-other-app/\(Self.md5)", "fail/gnome-thumbnail-factory/\(otherMD5)"] {
            try scratch.write(path, TestPNG.make(width: 4, height: 4))
        }
        try cache.install([256: TestPNG.make(width: 256, height: 200)], uri: Self.uri, mtime: 5, size: 6)
        #expect(scratch.files() == ["fail/gnome-thumbnail-factory/\(otherMD5)", "large/\(Self.md5)", "xx-large/\(otherMD5)"])
    }

    @Test func aThumbnailLargerThanItsSizeIsRefusedAndNothingWritten() throws {
        let scratch = try Scratch("refuse")
        let cache = FreedesktopCache(root: scratch.path)
        let pngs = [256: TestPNG.make(width: 256, height: 100), 128: TestPNG.make(width: 129, height: 20)]
        #expect { try cache.install(pngs, uri: Self.uri, mtime: 1, size: 1) } throws: { ($0 as? ThumbnailError)?.code == .tooLarge }
        #expect { try cache.install([200: TestPNG.make(width: 20, height: 20)], uri: Self.uri, mtime: 1, size: 1) } throws: {
            ($0 as? ThumbnailError)?.code == .invalid
        }
        #expect { try cache.install([256: Array("junk".utf8)], uri: Self.uri, mtime: 1, size: 1) } throws: { ($0 as? ThumbnailError)?.code == .malformed }
        #expect(scratch.files().isEmpty)
    }

    @Test func removeAndRemoveFailures() throws {
        let scratch = try Scratch("remove")
        let cache = FreedesktopCache(root: scratch.path)
        try cache.install([512: TestPNG.make(width: 5, height: 5), 128: TestPNG.make(width: 5, height: 5)], uri: Self.uri, mtime: 1, size: 1)
        try scratch.write("fail/gnome-thumbnail-factory/\(Self.md5)", [1])
        try cache.removeFailures(uri: Self.uri)
        #expect(scratch.files() == ["normal/\(Self.md5)", "x-large/\(Self.md5)"])
        try scratch.write("fail/gnome-thumbnail-factory/\(Self.md5)", [1])
        try cache.remove(uri: Self.uri)
        #expect(scratch.files().isEmpty)
        // Nothing to remove, no cache at all: not an error.
        try FreedesktopCache(root: scratch.path + "/none").remove(uri: Self.uri)
    }

    @Test func moveRekeysEntriesAndDropsTheOldOnes() throws {
        let scratch = try Scratch("move")
        let cache = FreedesktopCache(root: scratch.path)
        let large = TestPNG.make(width: 256, height: 99), normal = TestPNG.make(width: 128, height: 49)
        try cache.install([256: large, 128: normal], uri: Self.uri, mtime: 10, size: 20)
        let newMD5 = FreedesktopCache.fileName(uri: Self.other)
        try scratch.write("xx-large/\(newMD5)", TestPNG.make(width: 3, height: 3))  // stale, of what was at the new path
        try cache.move(from: Self.uri, to: Self.other, mtime: 11, size: 21)
        #expect(scratch.files() == ["large/\(newMD5)", "normal/\(newMD5)"])
        #expect(cache.isCurrent(uri: Self.other, sizes: [256, 128], mtime: 11, size: 21))
        #expect(try PNGText.stripped(cache.entry(uri: Self.other, size: 256) ?? []) == large)
        // The same URI, a new mtime: the keys are rewritten in place.
        try cache.move(from: Self.other, to: Self.other, mtime: 12, size: 21)
        #expect(cache.isCurrent(uri: Self.other, sizes: [256, 128], mtime: 12, size: 21))
        // Nothing to move: nothing happens.
        try cache.move(from: "file:///nothing", to: Self.uri, mtime: 1, size: 1)
        #expect(scratch.files() == ["large/\(newMD5)", "normal/\(newMD5)"])
    }

    static func inode(_ path: String) throws -> UInt64 {
        try (FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
    }
}

/// Set once, read from anywhere.
final class Flag: Sendable {
    private let state = Mutex(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}
