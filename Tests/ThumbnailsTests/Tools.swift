import Foundation

/// The programs the tests check against (GLib through python3-gi, GIO's `gio`,
/// gdk-pixbuf-thumbnailer, ImageMagick) and how to run them. A test that needs one that is
/// not installed is skipped, saying which Debian package brings it.
enum Tools {
    static let python = "/usr/bin/python3"
    static let gio = "/usr/bin/gio"
    static let thumbnailer = "/usr/bin/gdk-pixbuf-thumbnailer"
    static let convert = "/usr/bin/convert"

    static func installed(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// python3 with GLib and GdkPixbuf (python3-gi, gir1.2-glib-2.0, gir1.2-gdkpixbuf-2.0).
    static let hasPythonGI: Bool = {
        guard installed(python) else { return false }
        let script = "import gi; gi.require_version('GdkPixbuf', '2.0'); from gi.repository import GLib, GdkPixbuf"
        return (try? run(python, ["-c", script]))?.status == 0
    }()

    static let hasGIO = installed(gio)
    static let hasThumbnailer = installed(thumbnailer) && FileManager.default.fileExists(atPath: "/usr/share/thumbnailers/gdk-pixbuf-thumbnailer.thumbnailer")
    static let hasConvert = installed(convert)

    /// Whether bubblewrap can make its namespaces here (not in every container).
    static let bwrapWorks: Bool = {
        guard installed("/usr/bin/bwrap") else { return false }
        let arguments = ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--unshare-all", "--die-with-parent", "/usr/bin/true"]
        return (try? run("/usr/bin/bwrap", arguments))?.status == 0
    }()

    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs a program to its end (a test may block), with extra environment variables;
    /// stdin and stderr go through files, so only stdout is a pipe and nothing can deadlock.
    static func run(_ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String] = [:]) throws -> Output {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inputURL = scratch.appendingPathComponent("stdin"), errorURL = scratch.appendingPathComponent("stderr")
        try input.write(to: inputURL)
        try Data().write(to: errorURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? Data(contentsOf: errorURL)) ?? Data()
        return Output(status: process.terminationStatus, stdout: output, stderr: String(decoding: errors, as: UTF8.self))
    }

    /// Runs a python3 script (`-c`) that must succeed.
    static func python(_ script: String, input: Data = Data()) throws -> Output {
        let output = try run(python, ["-c", script], input: input)
        guard output.status == 0 else { throw Failed(description: "python3 failed (\(output.status)): \(output.stderr)") }
        return output
    }
}
