@testable import FuseKit
import Foundation
import Glibc
import Testing

/// The pipe a read's reply is spliced through: it carries exactly the file's bytes (fewer
/// only at its end), a file that cannot be read is an error (never a short count, which
/// the kernel would take for the file's end), and a pipe left holding bytes is never
/// handed to another reply.
@Suite(.serialized) struct SplicePipeTests {
    static func file(_ bytes: [UInt8]) throws -> (path: String, fd: Int32) {
        let path = NSTemporaryDirectory() + "splice-" + UUID().uuidString
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, open(path, O_RDONLY))
    }

    static func drain(_ pipe: SplicePipe, _ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { Glibc.read(pipe.readEnd, $0.baseAddress! + done, count - done) }
            guard n > 0 else { break }
            done += n
        }
        return Array(out.prefix(done))
    }

    @Test func aPipeCarriesTheFilesBytesAndFewerAtItsEnd() throws {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<(3 << 20) + 12345).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let (path, fd) = try Self.file(bytes)
        defer { close(fd); unlink(path) }
        let cases: [(offset: Int, count: Int)] = [
            (0, 8192), (1, 8192), (4095, 131_072), (1 << 20, 1 << 20), (123_457, (1 << 20) - 8192), (bytes.count - 5000, 131_072),
            (bytes.count - 8192, 8192), (bytes.count, 65536), (bytes.count + 100, 65536),
        ]
        for (offset, count) in cases {
            let pipe = try #require(SplicePipe.take(holding: count, from: Int64(offset)))
            let moved = try #require(try pipe.fill(from: fd, offset: Int64(offset), count: count))
            let expected = Array(bytes[min(offset, bytes.count)..<min(offset + count, bytes.count)])
            #expect(moved == expected.count, "\(count) at \(offset)")
            #expect(Self.drain(pipe, moved) == expected, "\(count) at \(offset)")
            pipe.recycle()
        }
    }

    /// Control: the same call on a descriptor that cannot be read throws with its errno.
    @Test func aFileThatCannotBeReadIsAnError() throws {
        let (path, fd) = try Self.file(Array(repeating: 7, count: 65536))
        close(fd)
        defer { unlink(path) }
        let writeOnly = open(path, O_WRONLY)
        defer { close(writeOnly) }
        let pipe = try #require(SplicePipe.take(holding: 65536, from: 0))
        #expect(throws: FuseError.self) { try pipe.fill(from: writeOnly, offset: 0, count: 65536) }
        do {
            _ = try pipe.fill(from: writeOnly, offset: 0, count: 65536)
        } catch {
            #expect(error.code == .readFailed && error.errno == EBADF, "\(error)")
        }
        let readable = open(path, O_RDONLY)
        defer { close(readable) }
        #expect(try pipe.fill(from: readable, offset: 0, count: 65536) == 65536)
    }

    @Test func aPipeLeftHoldingBytesIsNeverHandedOut() throws {
        let (path, fd) = try Self.file(Array(repeating: 9, count: 65536))
        defer { close(fd); unlink(path) }
        // The idle pipes taken first, so the next ones are this test's.
        let idle = (0..<20).compactMap { _ in SplicePipe.take(holding: 65536, from: 0) }
        defer { idle.forEach { $0.recycle() } }
        let full = try #require(SplicePipe.take(holding: 65536, from: 0))
        _ = try full.fill(from: fd, offset: 0, count: 65536)
        full.recycle()
        let next = try #require(SplicePipe.take(holding: 65536, from: 0))
        #expect(next !== full)
        #expect(next.pending == 0)
        #expect(full.pending == 65536)
        next.recycle()
        #expect(SplicePipe.take(holding: 65536, from: 0) === next, "an emptied pipe is kept for the next reply")
    }
}
