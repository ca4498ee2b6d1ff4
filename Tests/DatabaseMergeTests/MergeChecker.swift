import Foundation

/// Judges a merged file against the model's contents: the same rows in every table and the
/// same AUTOINCREMENT counters exactly, and `PRAGMA integrity_check` ok by the sqlite3
/// program (not the library the merge used).
struct MergeChecker {
    let schema: [TableSpec]

    func problems(_ path: String, expected: Snapshot) throws -> [String] {
        var problems: [String] = []
        if let difference = try Snapshot(path: path, schema: schema).difference(from: expected) {
            problems.append(difference)
        }
        let integrity = try Self.sqlite3(path, "PRAGMA integrity_check")
        if integrity != "ok\n" {
            problems.append("integrity_check: \(integrity)")
        }
        return problems
    }

    static func sqlite3(_ path: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, sql]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: text, as: UTF8.self)
    }
}
