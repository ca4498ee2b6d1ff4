import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import Inodes
import ItemModel
import SeaweedFSFixture
import Testing

/// Programs that only look (`Lookers`), known by the process behind an open: a thumbnailer
/// never downloads a file that is not here, `file` and indexers read its leading block at
/// most, and none of them counts as a use; every other program reads as before.
@Suite(.serialized) struct LookerTests {
    /// A running process whose executable is named `name` (a copy of `sleep`).
    final class Program: Sendable {
        let process: Process

        init(_ name: String) throws {
            let folder = try TemporaryDirectories.make("ubiqfs-looker")
            let path = folder + "/" + name
            try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: path)
            process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["60"]
            try process.run()
        }

        var caller: Caller { Caller(uid: getuid(), gid: getgid(), pid: process.processIdentifier) }

        deinit {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test func lookersAreKnownByTheirProgram() throws {
        let lookers = Lookers.defaults
        let thumbnailer = try Program("gdk-pixbuf-thumbnailer")
        let indexer = try Program("tracker-extract-3")
        let sniffer = try Program("file")
        let viewer = try Program("photo-viewer")
        #expect(lookers.kind(of: thumbnailer.process.processIdentifier) == .thumbnailer)
        #expect(lookers.kind(of: indexer.process.processIdentifier) == .indexer, "a name longer than the kernel keeps, by its executable")
        #expect(lookers.kind(of: sniffer.process.processIdentifier) == .sniffer)
        #expect(lookers.kind(of: viewer.process.processIdentifier) == nil, "the control: any other program")
        #expect(lookers.kind(of: getpid()) == nil)
        #expect(lookers.kind(of: 0) == nil, "a caller outside the daemon's pid namespace")

        let mine = try Lookers.parse("thumbnailer:photo-viewer, sniffer:-file")
        #expect(mine.kind(of: viewer.process.processIdentifier) == .thumbnailer)
        #expect(mine.kind(of: sniffer.process.processIdentifier) == nil)
        #expect(mine.kind(of: thumbnailer.process.processIdentifier) == .thumbnailer, "the defaults stay")
        #expect(throws: LookersError.self) { try Lookers.parse("viewer:photo-viewer") }
        #expect(throws: LookersError.self) { try Lookers.parse("thumbnailer") }
    }

    func state(_ device: TestDevice, _ ino: Inode) throws -> String {
        String(decoding: try device.core.getXattr(ino, name: Array("user.ubiqfs.state".utf8)), as: UTF8.self)
    }

    func read(_ device: TestDevice, _ ino: Inode, as caller: Caller?, size: Int, offset: Int64) async throws -> [UInt8] {
        let handle = try await device.core.open(ino, flags: O_RDONLY, caller: caller).handle
        defer { device.core.release(handle: handle) }
        return try await device.core.read(handle: handle, size: size, offset: offset)
    }

    @Test func aThumbnailerNeverDownloadsAndASnifferReadsTheLeadingBlock() async throws {
        let store = InMemoryStore()
        let a = try await TestDevice(store: store, name: "a")
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 13)) }
        try await a.write("photo.jpg", bytes)
        try await a.sync()
        let b = try await TestDevice(store: store, name: "b")
        let ino = try #require(b.inode("photo.jpg"))
        let (thumbnailer, sniffer) = (try Program("gdk-pixbuf-thumbnailer"), try Program("file"))

        await #expect(throws: FileSystemError.self) { _ = try await b.core.open(ino, flags: O_RDONLY, caller: thumbnailer.caller) }
        #expect(try state(b, ino) == "placeholder", "the thumbnailer downloaded nothing")

        let lead = Int(ContainerInfo.leadingBlockSize)
        let head = try await read(b, ino, as: sniffer.caller, size: 7 << 20, offset: 0)
        #expect(head == Array(bytes.prefix(lead)), "file(1) gets the leading block, as if the file ended there")
        #expect(try await read(b, ino, as: sniffer.caller, size: 4096, offset: Int64(bytes.count - 4096)).isEmpty)
        #expect(try b.core.attributes(ino).blocks * 512 <= Int64(lead), "nothing past it fetched")
        #expect(try b.core.attributes(ino).size == Int64(bytes.count), "the file's size stays")

        // The control: a program that uses the file reads it whole.
        #expect(try await read(b, ino, as: TestDevice.caller, size: bytes.count, offset: 0) == bytes)
        // Once it is here, the thumbnailer reads it as any program.
        #expect(try await b.waitUntilLocal("photo.jpg"))
        #expect(try await read(b, ino, as: thumbnailer.caller, size: bytes.count, offset: 0) == bytes)
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aLookIsNoUse() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a", accessTimes: AccessTimes(rule: .strictatime))
        try await device.write("notes.txt", "some notes")
        let ino = try #require(device.inode("notes.txt"))
        let before = try device.core.attributes(ino).atime
        try await Task.sleep(for: .milliseconds(20))
        let indexer = try Program("tracker-extract-3")
        _ = try await read(device, ino, as: indexer.caller, size: 100, offset: 0)
        #expect(try device.core.attributes(ino).atime == before, "an indexer's read moves no access time")
        _ = try await read(device, ino, as: TestDevice.caller, size: 100, offset: 0)
        #expect(try device.core.attributes(ino).atime > before, "the control: a program's read does")
        await device.shutdown()
    }
}
