import Foundation
import Testing
import Thumbnails

/// How runs are made, with shell scripts as thumbnailers of a made-up type: timeouts,
/// cancellation, niceness, the sandbox's view, failures, and the size checks.
@Suite struct FakeThumbnailerTests {
    /// A data folder whose thumbnailer for `*.ubqt` runs `script` as `sh -c script %i %o`
    /// (so `$0` is the input and `$1` the output), then the system's folders.
    static func thumbnailers(_ scratch: Scratch, script: String, sandbox: Thumbnailers.SandboxMode = .none) throws -> Thumbnailers {
        try scratch.write("data/mime/globs2", Array("50:application/x-ubiqfs-test:*.ubqt\n".utf8))
        let entry = "[Thumbnailer Entry]\nExec=/bin/sh -c '\(script)' %i %o\nMimeType=application/x-ubiqfs-test;\n"
        try scratch.write("data/thumbnailers/test.thumbnailer", Array(entry.utf8))
        return Thumbnailers(dataDirectories: [scratch.path + "/data", "/usr/share"], sandbox: sandbox, gstreamerCache: nil)
    }

    static let name = Array("photo.ubqt".utf8)

    @Test func aThumbnailerThatTakesTooLongIsKilled() async throws {
        let scratch = try Scratch("timeout")
        let thumbnailers = try Self.thumbnailers(scratch, script: "echo $$ > \(scratch.path)/pid; sleep 30; touch \(scratch.path)/finished")
        do {
            _ = try await thumbnailers.make(source: "/dev/null", name: Self.name, sizes: [256], timeout: .milliseconds(500))
            Issue.record("a thumbnailer that sleeps 30 s finished")
        } catch {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("killed"), "\(error)")
        }
        // Not timed (the suite runs beside other tests): a run not killed would have ended
        // its script.
        #expect(!scratch.exists("finished"))
        try Self.expectGone(pidFile: scratch.path + "/pid")
    }

    @Test func cancellingTheCallKillsTheThumbnailer() async throws {
        let scratch = try Scratch("cancel")
        let thumbnailers = try Self.thumbnailers(scratch, script: "echo $$ > \(scratch.path)/pid; sleep 30; touch \(scratch.path)/finished")
        let task = Task { try await thumbnailers.make(source: "/dev/null", name: Self.name, sizes: [256], timeout: .seconds(600)) }
        // The whole line: the shell creates the file before it writes the number (under
        // load, a read in between found it empty).
        while (try? String(contentsOfFile: scratch.path + "/pid", encoding: .utf8))?.hasSuffix("\n") != true {
            try await Task.sleep(for: .milliseconds(20))
        }
        task.cancel()
        await #expect(throws: ThumbnailError.self) { try await task.value }
        #expect(!scratch.exists("finished"), "killed before its script ended")
        try Self.expectGone(pidFile: scratch.path + "/pid")
    }

    /// Eight runs at once all run at the same time, though the cooperative pool has only as
    /// many threads as cores: no run holds a thread while it waits. Each script counts the
    /// scripts alive when it ends. (Not timed: other tests beside it may hold the pool.)
    @Test func runsDoNotHoldThePoolsThreads() async throws {
        let scratch = try Scratch("pool")
        let source = try scratch.write("source", TestPNG.make(width: 40, height: 30))
        try FileManager.default.createDirectory(atPath: scratch.path + "/alive", withIntermediateDirectories: true)
        let alive = scratch.path + "/alive"
        let script = "touch \(alive)/$$; sleep 2; ls \(alive) | wc -l > \(scratch.path)/count.$$; rm \(alive)/$$; cp \"$0\" \"$1\""
        let thumbnailers = try Self.thumbnailers(scratch, script: script)
        try await withThrowingTaskGroup(of: [Int: [UInt8]].self) { group in
            for _ in 0..<8 {
                group.addTask { try await thumbnailers.make(source: source, name: Self.name, sizes: [128], timeout: .seconds(600)) }
            }
            for try await made in group { #expect(made.keys.sorted() == [128]) }
        }
        let counts = try scratch.files().filter { $0.hasPrefix("count.") }.map { name in
            Int(try String(contentsOfFile: scratch.path + "/" + name, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        #expect(counts.count == 8)
        #expect(counts.max() == 8, "at most \(counts.max() ?? 0) of 8 runs were alive at once, on \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    @Test func thumbnailersRunNiced() async throws {
        let scratch = try Scratch("nice")
        let source = try scratch.write("source", TestPNG.make(width: 4, height: 4))
        let thumbnailers = try Self.thumbnailers(scratch, script: "nice > \(scratch.path)/niceness; cp \"$0\" \"$1\"")
        _ = try await thumbnailers.make(source: source, name: Self.name, sizes: [128], timeout: .seconds(600))
        let niceness = try String(contentsOfFile: scratch.path + "/niceness", encoding: .utf8)
        #expect(niceness.trimmingCharacters(in: .whitespacesAndNewlines) == "19")
    }

    /// Directly, the thumbnailer reads a symlink named with the real extension; under bwrap,
    /// the source bound read-only at gnome-desktop's path in a /tmp of its own, and nothing
    /// else of the host's /tmp. The script says what it sees in its error message.
    @Test(arguments: [false, true])
    func theThumbnailerSeesItsInputWhereGNOMEPutsIt(sandboxed: Bool) async throws {
        if sandboxed && !Tools.bwrapWorks {
            print("FakeThumbnailerTests: bwrap cannot make namespaces here, so the sandboxed run is not tried")
            return
        }
        let scratch = try Scratch("view")
        let source = try scratch.write("cache-file", Array("hello".utf8))
        let script = "echo \"input=$0 output=$1 link=$(readlink \"$0\") content=$(cat \"$0\") write=$( (echo x >> \"$0\") 2>/dev/null && echo yes || echo no) scratch=$(ls -d \(scratch.path) 2>&1)\" >&2; exit 3"
        let thumbnailers = try Self.thumbnailers(scratch, script: script, sandbox: sandboxed ? .bubblewrap : .none)
        do {
            _ = try await thumbnailers.make(source: source, name: Self.name, sizes: [256], timeout: .seconds(600))
            Issue.record("the script made a thumbnail")
        } catch {
            #expect(error.code == .thumbnailerFailed)
            #expect(error.message.contains("exit status 3") && error.message.contains("content=hello"), "\(error)")
            if sandboxed {
                #expect(error.message.contains("input=/tmp/gnome-desktop-file-to-thumbnail.ubqt output=/tmp/gnome-desktop-thumbnailer.png link= "), "\(error)")
                #expect(error.message.contains("write=no") && error.message.contains("No such file or directory"), "\(error)")
            } else {
                #expect(error.message.contains("/gnome-desktop-file-to-thumbnail.ubqt output=") && error.message.contains("link=\(source) "), "\(error)")
            }
        }
        // Only the sandbox keeps the thumbnailer from writing to the source.
        if sandboxed { #expect(try String(contentsOfFile: source, encoding: .utf8) == "hello") }
    }

    @Test func aThumbnailerThatMakesNothingFails() async throws {
        let scratch = try Scratch("nothing")
        let thumbnailers = try Self.thumbnailers(scratch, script: "exit 0")
        await #expect { try await thumbnailers.make(source: "/dev/null", name: Self.name, sizes: [256], timeout: .seconds(600)) } throws: {
            ($0 as? ThumbnailError)?.code == .thumbnailerFailed
        }
    }

    @Test func aThumbnailLargerThanAskedIsRefused() async throws {
        let scratch = try Scratch("large")
        let source = try scratch.write("source", TestPNG.make(width: 300, height: 20))
        let thumbnailers = try Self.thumbnailers(scratch, script: "cp \"$0\" \"$1\"")
        await #expect { try await thumbnailers.make(source: source, name: Self.name, sizes: [256], timeout: .seconds(600)) } throws: {
            ($0 as? ThumbnailError)?.code == .tooLarge
        }
        await #expect { try await thumbnailers.make(source: source, name: Self.name, sizes: [300], timeout: .seconds(600)) } throws: {
            ($0 as? ThumbnailError)?.code == .invalid
        }
    }

    /// A 1024 thumbnail over Thumbnail.maxBytes is left out; the 512 made from it is kept.
    @Test(.enabled(if: Tools.hasThumbnailer, "needs gdk-pixbuf-thumbnailer (Debian: libgdk-pixbuf2.0-bin) to scale"))
    func sizesOverTheByteLimitAreLeftOut() async throws {
        let scratch = try Scratch("bytes")
        let big = TestPNG.make(width: 1024, height: 683)  // stored, not compressed: 2 MiB
        #expect(big.count > 1 << 20)
        let source = try scratch.write("source", big)
        let thumbnailers = try Self.thumbnailers(scratch, script: "cp \"$0\" \"$1\"")
        let made = try await thumbnailers.make(source: source, name: Self.name, sizes: [1024, 512], timeout: .seconds(600))
        #expect(made.keys.sorted() == [512])
        #expect(try PNGText.dimensions(made[512] ?? []).width == 512)
    }

    static func expectGone(pidFile: String) throws {
        let text = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let pid = try #require(Int32(text))
        // Reaped by then, or a zombie at most for a moment.
        for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "process \(pid) still runs")
    }
}
