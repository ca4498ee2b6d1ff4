import IgnoreRules
import Testing

/// The rules git does not have (`.nosync`) and what an ignored item is told it is ignored by.
@Suite struct IgnoreRulesTests {
    static func rules(top: String = "", folders: [String: String] = [:], device: String = "") -> IgnoreRules {
        var rules = IgnoreRules(device: IgnoreList(folder: [], source: "this device's list", contents: Array(device.utf8)))
        rules.set(IgnoreList(folder: [], source: ".ubiqfsignore", contents: Array(top.utf8)))
        for (folder, text) in folders { rules.set(IgnoreList(folder: Array(folder.utf8), source: folder + "/.ubiqfsignore", contents: Array(text.utf8))) }
        return rules
    }

    static func reason(_ rules: IgnoreRules, _ path: String, folder: Bool = false) -> String? {
        rules.reason(for: Array(path.utf8), isDirectory: folder)?.description
    }

    /// A `.nosync` name is ignored with everything in it, and no `!` brings it back.
    @Test func aNosyncNameStaysLocalWhateverThePatternsSay() {
        let rules = Self.rules(top: "!*.nosync\n!cache.nosync/**\n")
        #expect(Self.reason(rules, "cache.nosync", folder: true) == "its name ends in .nosync")
        #expect(Self.reason(rules, "cache.nosync/a/b.txt") == "it is inside cache.nosync, ignored: its name ends in .nosync")
        #expect(Self.reason(rules, "notes.nosync") != nil)
        #expect(Self.reason(rules, ".nosync") != nil)
        #expect(Self.reason(rules, "nosync") == nil)
        #expect(Self.reason(rules, "a.nosync.txt") == nil)
    }

    /// The deepest folder's file decides before the top's, and both before the device's list.
    @Test func theNearestListDecides() {
        let rules = Self.rules(top: "*.log\n", folders: ["app": "!keep.log\n"], device: "build/\n!*.log\n")
        #expect(Self.reason(rules, "x.log") == "\"*.log\" in .ubiqfsignore")
        #expect(Self.reason(rules, "app/keep.log") == nil)
        #expect(Self.reason(rules, "app/other.log") == "\"*.log\" in .ubiqfsignore")
        #expect(Self.reason(rules, "app/build", folder: true) == "\"build/\" in this device's list")
        #expect(Self.reason(rules, "app/build") == nil)
        #expect(Self.reason(rules, "app/build/x.o") == "it is inside app/build, ignored: \"build/\" in this device's list")
    }

    /// A folder's own file speaks of what is inside it, not of the folder.
    @Test func aFoldersFileDoesNotJudgeTheFolder() {
        let rules = Self.rules(folders: ["a": "a\n/b\n"])
        #expect(Self.reason(rules, "a", folder: true) == nil)
        #expect(Self.reason(rules, "a/a") != nil)
        #expect(Self.reason(rules, "a/b") != nil)
        #expect(Self.reason(rules, "a/c/b") == nil)
        #expect(Self.reason(rules, "a/c/a") != nil)
    }

    /// Lines as git reads them: comments, escapes, trailing spaces, CRLF, a byte order mark.
    @Test func linesAreReadAsGitReadsThem() {
        let list = IgnoreList(folder: [], source: "x", contents: Array("\u{FEFF}#c\n\\#c\n\\!x\r\nspace\\ \ntrail   \n\n".utf8))
        #expect(list.patterns.map(\.line) == ["\\#c", "\\!x", "space\\ ", "trail"])
        #expect(list.patterns.map(\.negated) == [false, false, false, false])
    }
}
