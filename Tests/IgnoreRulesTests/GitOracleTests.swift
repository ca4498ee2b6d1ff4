import Foundation
import IgnoreRules
import ItemModel
import Testing

/// `IgnoreRules` against git itself: random trees with random ignore files in random
/// folders (and a device list, git's `info/exclude`), every path asked of both. A seed
/// replays a run: `UBIQFS_RANDOM_SEED=<seed>`; `UBIQFS_IGNORE_CASES` sets how many trees.
@Suite struct GitOracleTests {
    static let names = ["a", "b", "ab", "ba", "a.o", "b.o", "build", "node_modules", "x y", "[x]", "a*b", ".hidden", "!x", "#c", "Ä", "-", "log.txt"]
    static let components = [
        "*", "?", "**", "*.o", "a*", "*b", "b?", "[ab]", "[!a]", "[a-c]*", "[[:alpha:]]*", "node_*", "\\[x\\]", "a\\*b", "\\!x", "\\#c",
        "a", "b", "ab", "build", "node_modules", "x y", "log.txt", ".hidden", "Ä", "[x", "**a", "a/**",
    ]

    struct Tree {
        var files: Set<String> = []
        var folders: Set<String> = []
        /// Ignore file contents by folder ("" for the top).
        var ignoreFiles: [String: String] = [:]
        var deviceList = ""
        var paths: [String] { (files.union(folders)).sorted() }
    }

    struct Tally {
        var paths = 0, ignored = 0, reincluded = 0, insideIgnored = 0, naiveDisagrees = 0
    }

    @Test func everyPathIsJudgedAsGitJudgesIt() throws {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? 20_261_127
        let cases = ProcessInfo.processInfo.environment["UBIQFS_IGNORE_CASES"].flatMap(Int.init) ?? 150
        var rng = SplitMix64(seed: seed)
        var tally = Tally()
        for index in 0..<cases {
            let tree = Self.makeTree(&rng)
            let ignoredByGit = try Self.gitIgnored(tree)
            let rules = Self.rules(for: tree)
            for path in tree.paths {
                let isFolder = tree.folders.contains(path)
                let reason = rules.reason(for: Array(path.utf8), isDirectory: isFolder)
                let expected = ignoredByGit.contains(path)
                tally.paths += 1
                if expected { tally.ignored += 1 }
                if case .inside = reason { tally.insideIgnored += 1 }
                if reason == nil, Self.lastMatchIsNegated(rules, path, isFolder) { tally.reincluded += 1 }
                // The control: without the rule that an ignored folder's items stay ignored.
                if (rules.ownReason(for: Array(path.utf8), isDirectory: isFolder) != nil) != expected { tally.naiveDisagrees += 1 }
                if (reason != nil) != expected {
                    Issue.record("""
                        seed \(seed) case \(index): \(path)\(isFolder ? "/" : ""): git says \(expected ? "ignored" : "not ignored"), ours \(reason.map { "ignored: \($0)" } ?? "not ignored")
                        ignore files: \(tree.ignoreFiles.sorted { $0.key < $1.key }.map { "\n  [\($0.key)/] \($0.value.debugDescription)" }.joined())
                          device list: \(tree.deviceList.debugDescription)
                        replay with UBIQFS_RANDOM_SEED=\(seed)
                        """)
                    return
                }
            }
        }
        print("GitOracleTests: seed \(seed), \(cases) trees, \(tally.paths) paths: \(tally.ignored) ignored, \(tally.insideIgnored) inside an ignored folder, \(tally.reincluded) brought back by `!`; a matcher without the folder rule disagrees with git on \(tally.naiveDisagrees)")
        // The generator reaches every rule, and the checker tells a wrong matcher apart.
        #expect(tally.ignored > tally.paths / 10 && tally.ignored < tally.paths * 9 / 10)
        #expect(tally.reincluded > 0 && tally.insideIgnored > 0)
        #expect(tally.naiveDisagrees > 0)
    }

    static func lastMatchIsNegated(_ rules: IgnoreRules, _ path: String, _ isFolder: Bool) -> Bool {
        rules.decidingPattern(for: Array(path.utf8), isDirectory: isFolder)?.0.negated ?? false
    }

    static func makeTree(_ rng: inout SplitMix64) -> Tree {
        var tree = Tree()
        for _ in 0..<(8 + rng.below(20)) {
            let depth = 1 + rng.below(4)
            let parts = (0..<depth).map { _ in rng.pick(names)! }
            for end in 1..<depth { tree.folders.insert(parts[..<end].joined(separator: "/")) }
            let path = parts.joined(separator: "/")
            if !tree.folders.contains(path) && !tree.files.contains(path) {
                if rng.chance(25) { tree.folders.insert(path) } else { tree.files.insert(path) }
            }
        }
        // A name both a file and a folder's prefix: the folder wins.
        tree.files.subtract(tree.folders)
        tree.files = tree.files.filter { file in !tree.folders.contains { $0.hasPrefix(file + "/") } }
        let places = [""] + tree.folders.sorted()
        for _ in 0..<(1 + rng.below(3)) {
            tree.ignoreFiles[rng.pick(places)!] = makeFile(&rng)
        }
        if rng.chance(40) { tree.deviceList = makeFile(&rng) }
        return tree
    }

    static func makeFile(_ rng: inout SplitMix64) -> String {
        let newline = rng.chance(10) ? "\r\n" : "\n"
        var lines: [String] = []
        for _ in 0..<(1 + rng.below(5)) {
            if rng.chance(8) { lines.append(rng.chance(50) ? "# a comment" : ""); continue }
            lines.append(makePattern(&rng))
        }
        let byteOrderMark = rng.chance(5) ? "\u{FEFF}" : ""
        return byteOrderMark + lines.joined(separator: newline) + (rng.chance(80) ? newline : "")
    }

    static func makePattern(_ rng: inout SplitMix64) -> String {
        var text = rng.chance(25) ? "!" : ""
        if rng.chance(20) { text += "/" }
        let count = rng.chance(60) ? 1 : rng.chance(75) ? 2 : 3
        text += (0..<count).map { _ in rng.pick(components)! }.joined(separator: "/")
        if rng.chance(25) { text += "/" }
        if rng.chance(6) { text += rng.chance(50) ? "  " : "\\ " }
        return text
    }

    static func rules(for tree: Tree) -> IgnoreRules {
        var rules = IgnoreRules(device: IgnoreList(folder: [], source: "device", contents: Array(tree.deviceList.utf8)))
        for (folder, contents) in tree.ignoreFiles {
            rules.set(IgnoreList(folder: Array(folder.utf8), source: folder + "/.gitignore", contents: Array(contents.utf8)))
        }
        return rules
    }

    /// The paths `git check-ignore` calls ignored, in a repository holding the tree.
    static func gitIgnored(_ tree: Tree) throws -> Set<String> {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-ignore-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        _ = try git(["init", "-q", root], in: root, input: Data())
        for folder in tree.folders { try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true) }
        for file in tree.files where !FileManager.default.createFile(atPath: root + "/" + file, contents: Data()) {
            throw GitFailed(description: "cannot create \(root)/\(file)")
        }
        for (folder, contents) in tree.ignoreFiles {
            try Data(contents.utf8).write(to: URL(fileURLWithPath: root + "/" + (folder.isEmpty ? "" : folder + "/") + ".gitignore"))
        }
        try Data(tree.deviceList.utf8).write(to: URL(fileURLWithPath: root + "/.git/info/exclude"))
        let input = Data(tree.paths.map { $0 + "\0" }.joined().utf8)
        let output = try git(["check-ignore", "-z", "--no-index", "--stdin"], in: root, input: input, allowed: [0, 1])
        return Set(output.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
    }

    struct GitFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs git with no user or system configuration (no global excludes file).
    static func git(_ arguments: [String], in directory: String, input: Data, allowed: Set<Int32> = [0]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = [
            "HOME": directory, "XDG_CONFIG_HOME": directory + "/.config", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin",
        ]
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        (process.standardInput, process.standardOutput, process.standardError) = (stdin, stdout, stderr)
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard allowed.contains(process.terminationStatus) else {
            throw GitFailed(description: "git \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: errors, as: UTF8.self))")
        }
        return output
    }
}
