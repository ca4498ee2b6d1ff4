import Foundation

/// `git merge-file` run on three texts, with no user or system configuration.
struct GitMergeFile {
    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    /// How git resolves conflicts, when asked to (`--ours`, `--union`); nil for markers.
    enum Resolution: String {
        case ours = "--ours", union = "--union"
    }

    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-merge-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Git's merged text and its number of conflicts (0: a clean merge).
    func merge(base: [UInt8], ours: [UInt8], theirs: [UInt8], resolving: Resolution? = nil) throws -> (text: [UInt8], conflicts: Int) {
        for (name, bytes) in [("base", base), ("ours", ours), ("theirs", theirs)] {
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = ["merge-file", "-p"] + (resolving.map { [$0.rawValue] } ?? []) + ["ours", "base", "theirs"]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = [
            "HOME": directory, "XDG_CONFIG_HOME": directory + "/.config", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin",
        ]
        let (stdout, stderr) = (Pipe(), Pipe())
        (process.standardOutput, process.standardError) = (stdout, stderr)
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, (0..<128).contains(process.terminationStatus) else {
            throw Failed(description: "git merge-file exited \(process.terminationStatus): \(String(decoding: errors, as: UTF8.self))")
        }
        return ([UInt8](output), Int(process.terminationStatus))
    }
}
