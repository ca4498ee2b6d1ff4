import Foundation
import Glibc

/// The MIME type of a file by its name, from the shared-mime-info `globs2` files (lines
/// `weight:type:glob[:cs]`), as GIO guesses it for a name: a literal name first, else the
/// matching glob of highest weight, the longest on a tie. Names are compared in lowercase
/// unless the glob is case-sensitive (`:cs`).
struct MimeGlobs: Sendable {
    struct Glob: Sendable, Equatable {
        var weight: Int
        var mimeType: String
        var pattern: [UInt8]
        var caseSensitive: Bool
        /// No `*`, `?` or `[`: it names a file.
        var isLiteral: Bool { !pattern.contains { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "[") } }
    }

    var globs: [Glob]

    /// The `mime/globs2` of each data folder, the first the strongest: a type marked
    /// `__NOGLOBS__` in a folder loses the globs the folders after it give it.
    init(dataDirectories: [String]) {
        var globs: [Glob] = []
        var overridden: Set<String> = []
        for folder in dataDirectories {
            guard let contents = try? String(contentsOfFile: folder + "/mime/globs2", encoding: .utf8) else { continue }
            let (found, noGlobs) = Self.parse(contents)
            globs += found.filter { !overridden.contains($0.mimeType) }
            overridden.formUnion(noGlobs)
        }
        self.globs = globs
    }

    init(globs: [Glob]) {
        self.globs = globs
    }

    /// The globs of one file, and the types it marks `__NOGLOBS__`.
    static func parse(_ contents: String) -> (globs: [Glob], noGlobs: Set<String>) {
        var globs: [Glob] = []
        var noGlobs: Set<String> = []
        for line in contents.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, let weight = Int(fields[0]), !fields[1].isEmpty, !fields[2].isEmpty else { continue }
            let mimeType = String(fields[1])
            if fields[2] == "__NOGLOBS__" {
                noGlobs.insert(mimeType)
                continue
            }
            let caseSensitive = fields.count == 4 && fields[3].split(separator: ",").contains("cs")
            let pattern = Array(fields[2].utf8)
            globs.append(Glob(weight: weight, mimeType: mimeType, pattern: caseSensitive ? pattern : lowercased(pattern), caseSensitive: caseSensitive))
        }
        return (globs, noGlobs)
    }

    /// The type of a name (its last component), nil if no glob matches.
    func mimeType(name: [UInt8]) -> String? {
        let base = Array(name.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).last ?? [])
        guard !base.isEmpty else { return nil }
        let lower = Self.lowercased(base)
        let matching = globs.filter { glob in
            let subject = glob.caseSensitive ? base : lower
            return glob.isLiteral ? glob.pattern == subject : Self.fnmatch(glob.pattern, subject)
        }
        let literal = matching.filter(\.isLiteral)
        let candidates = literal.isEmpty ? matching : literal
        return candidates.max { ($0.weight, $0.pattern.count) < ($1.weight, $1.pattern.count) }?.mimeType
    }

    /// ASCII letters in lowercase, other bytes as they are.
    static func lowercased(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 }
    }

    private static func fnmatch(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        guard !name.contains(0) else { return false }
        return (pattern + [0]).withUnsafeBufferPointer { pattern in
            (name + [0]).withUnsafeBufferPointer { name in
                pattern.withMemoryRebound(to: CChar.self) { pattern in
                    name.withMemoryRebound(to: CChar.self) { name in Glibc.fnmatch(pattern.baseAddress!, name.baseAddress!, 0) == 0 }
                }
            }
        }
    }
}
