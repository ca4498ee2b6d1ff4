import ContainerStore
import Foundation
import Glibc
import ItemModel
import SeaweedFSFixture
import Testing

/// A store folder that somebody else can write (a shared folder, a synced disk): it may
/// put symlinks, FIFOs, devices and folders where objects or folders of objects belong.
/// The daemon never follows one out of the store, never blocks on one, and refuses each
/// as a damaged object (issue 35).
@Suite struct HostileLocalFolderTests {
    struct Setup {
        let store: LocalFolderStore
        let base: String
        let outside: String
    }

    static func setup() throws -> Setup {
        let root = try TemporaryDirectories.make("ubiqfs-hostile")
        let store = try LocalFolderStore(root: root + "/shared", container: "c")
        let outside = root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        return Setup(store: store, base: store.base, outside: outside)
    }

    static func entries(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    static func expectDamaged(_ what: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("\(what): accepted")
        } catch let error as StoreError {
            #expect(error.code == .corrupt, "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test(arguments: ["packs", "journal", "blocks", ".tmp"])
    func aFolderReplacedByASymlinkIsNeverFollowed(folder: String) async throws {
        let s = try Self.setup()
        try await s.store.put("packs/seed", [0])
        try await s.store.put("blocks/ab/seed", [0])
        _ = try await s.store.putIfAbsent("journal/00000000000000000001", [0])
        try FileManager.default.removeItem(atPath: s.base + "/" + folder)
        try FileManager.default.createSymbolicLink(atPath: s.base + "/" + folder, withDestinationPath: s.outside)
        let victim = s.outside + "/00000000000000000002"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("theirs".utf8)))
        let key = folder == ".tmp" ? "packs/new" : folder == "blocks" ? "blocks/00000000000000000002" : "\(folder)/00000000000000000002"

        await Self.expectDamaged("put through \(folder)") { try await s.store.put(key, Array("mine".utf8)) }
        await Self.expectDamaged("putIfAbsent through \(folder)") { _ = try await s.store.putIfAbsent(key, Array("mine".utf8)) }
        if folder != ".tmp" {
            await Self.expectDamaged("get through \(folder)") { _ = try await s.store.get(key) }
            await Self.expectDamaged("delete through \(folder)") { try await s.store.delete(key) }
            await Self.expectDamaged("list through \(folder)") { _ = try await s.store.list(prefix: folder + "/", startAfter: nil, limit: 10) }
        }
        #expect(Self.entries(s.outside) == ["00000000000000000002"])
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "theirs")
    }

    /// A huge object (sparse, so this test costs no disk) is refused from its size before
    /// a byte is read: an 8 GiB record once got the daemon OOM-killed.
    @Test(arguments: ["journal/00000000000000000009", "blocks/ab", "packs/p"])
    func anObjectTooLargeForItsKeyIsRefusedBeforeItIsRead(key: String) async throws {
        let s = try Self.setup()
        try await s.store.put(key, [1])
        let size = ContainerLayout.largestObject(atKey: key) + 1
        #expect(truncate(s.base + "/" + key, off_t(size)) == 0)
        await Self.expectDamaged("get of \(size) bytes at \(key)") { _ = try await s.store.get(key) }
        #expect(try await s.store.get(key, range: 0..<1) == [1])
    }

    // A guard against a hang (a FIFO opened for reading), not a speed claim: beside
    // stress-ng a CI machine took more than a minute.
    @Test(.timeLimit(.minutes(10)), arguments: ["symlink", "fifo", "folder", "device"])
    func anObjectThatIsNotAFileIsRefusedAsDamaged(kind: String) async throws {
        let s = try Self.setup()
        _ = try await s.store.putIfAbsent("journal/00000000000000000001", [1])
        let path = s.base + "/journal/00000000000000000002"
        let secret = s.outside + "/secret"
        #expect(FileManager.default.createFile(atPath: secret, contents: Data("secret".utf8)))
        switch kind {
        case "symlink": try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: secret)
        case "fifo": #expect(mkfifo(path, 0o644) == 0)
        case "folder": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        default:
            guard getuid() == 0 else { return }
            #expect(mknod(path, S_IFCHR | 0o644, dev_t((1 << 8) | 3)) == 0)  // what /dev/null is
        }
        // Never opened in a way that blocks (a FIFO with no writer), never read through.
        await Self.expectDamaged("get of a \(kind)") { _ = try await s.store.get("journal/00000000000000000002") }
        await Self.expectDamaged("ranged get of a \(kind)") { _ = try await s.store.get("journal/00000000000000000002", range: 0..<3) }
        // The next commit at that key is refused as taken, not written through it.
        #expect(try await s.store.putIfAbsent("journal/00000000000000000002", [2]) == false)
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "secret")
        #expect(try await s.store.get("journal/00000000000000000001") == [1])
        // Not an object, so absent to `exists`: a block planted there is put again, and
        // the put replaces what is there (a link itself, never its target).
        #expect(try await s.store.exists("journal/00000000000000000002") == false)
        if kind != "folder" {
            try await s.store.put("journal/00000000000000000002", [3])
            #expect(try await s.store.get("journal/00000000000000000002") == [3])
            #expect(try String(contentsOfFile: secret, encoding: .utf8) == "secret")
        }
    }
}
