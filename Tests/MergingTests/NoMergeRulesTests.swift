import Merging
import Testing

/// `.ubiqfsnomerge` files: which files keep the conflict copy instead of a merge.
@Suite struct NoMergeRulesTests {
    static func rules(_ files: [(String, String)]) -> NoMergeRules {
        var rules = NoMergeRules()
        for (folder, contents) in files { rules.add(folder: Array(folder.utf8), contents: Array(contents.utf8)) }
        return rules
    }

    static func refused(_ rules: NoMergeRules, _ path: String) -> Bool { rules.reason(for: Array(path.utf8)) != nil }

    @Test func aFileWithNoPatternTakesEverythingBelowItsFolderOnly() {
        for contents in ["", "# only a comment\n\n"] {
            let rules = Self.rules([("code", contents)])
            #expect(Self.refused(rules, "code/main.swift") && Self.refused(rules, "code/deep/er/x.txt"), "\(contents.debugDescription)")
            #expect(!Self.refused(rules, "notes.md") && !Self.refused(rules, "codes/x.txt") && !Self.refused(rules, "code"))
            #expect(rules.reason(for: Array("code/a".utf8)) == "merging is off for it: \"*\" in /code/.ubiqfsnomerge")
        }
        // No file: everything merges (the control of the cases above).
        #expect(!Self.refused(NoMergeRules(), "code/main.swift"))
    }

    @Test func patternsAreIgnoreFilePatterns() {
        let rules = Self.rules([("", "*.csv\ndrafts/\n/top.txt\n")])
        #expect(Self.refused(rules, "data.csv") && Self.refused(rules, "a/b/data.csv"))
        #expect(Self.refused(rules, "drafts/x.md") && Self.refused(rules, "a/drafts/x.md"))
        #expect(Self.refused(rules, "top.txt") && !Self.refused(rules, "a/top.txt"))
        #expect(!Self.refused(rules, "data.csv.md") && !Self.refused(rules, "drafts"))
        #expect(rules.reason(for: Array("a/drafts/x.md".utf8)) == "merging is off for it: \"drafts/\" in /.ubiqfsnomerge")
    }

    @Test func theDeepestFileDecidesAndNegationLetsAFileMerge() {
        let rules = Self.rules([("", "*.md\n"), ("notes", "!*.md\n"), ("notes/old", "")])
        #expect(Self.refused(rules, "readme.md") && !Self.refused(rules, "notes/today.md"))
        #expect(Self.refused(rules, "notes/old/2019.md"))
        let negated = Self.rules([("repo", "*\n!todo.txt\n")])
        #expect(Self.refused(negated, "repo/main.c") && !Self.refused(negated, "repo/todo.txt"))
    }
}
