import Foundation
import ItemModel
import Merging
import Testing

/// `TextMerge` against `git merge-file` on generated edits. Where git merges, we must give
/// its bytes or another merge `MergeChecker` accepts; every merge we give must pass the
/// checker, the same bytes with the sides swapped. The disagreements are counted by kind.
/// Controls show the checker is fair: it accepts git's clean merges, and rejects git's
/// own resolutions of conflicts (`--ours`, `--union`; the 0.5% it accepts are correct
/// merges by another minimal alignment than git's, one where the two sides' changes do
/// not touch) and our merges with a line dropped, doubled or moved. A seed replays a run: `UBIQFS_RANDOM_SEED=<seed>`;
/// `UBIQFS_MERGE_CASES` sets how many cases, `UBIQFS_MERGE_LINES` the most lines of a base
/// (30); `UBIQFS_MERGE_SHOW=1` prints each disagreement.
@Suite struct GitMergeOracleTests {
    struct Tally {
        var cases = 0, gitClean = 0, gitConflicts = 0
        /// Git merged: we gave its bytes, another correct merge, or nothing (and then
        /// whether the checker finds any correct merge).
        var same = 0, otherMerge = 0, weConflict = 0, weConflictThoughMergeExists = 0
        /// Git conflicted: we merged (correctly, checked) or not.
        var weMerge = 0, bothConflict = 0
        /// Git's clean merges the checker accepts.
        var gitAccepted = 0
        /// Controls: (rejected, tried).
        var gitOurs = (0, 0), gitUnion = (0, 0), mutated = (0, 0)

        var summary: String {
            """
            \(cases) cases; git merged \(gitClean), conflicted on \(gitConflicts).
              where git merged: we gave its bytes in \(same), another correct merge in \(otherMerge), no merge in \(weConflict) \
            (a correct merge exists in \(weConflictThoughMergeExists) of them)
              where git conflicted: we merged (checked correct) \(weMerge), no merge \(bothConflict)
              the checker accepts \(gitAccepted) of git's \(gitClean) clean merges; it rejects git's --ours \
            \(gitOurs.0)/\(gitOurs.1), --union \(gitUnion.0)/\(gitUnion.1), our merges with a line dropped, doubled or moved \(mutated.0)/\(mutated.1)
            """
        }
    }

    @Test func mergesAsGitDoesOrCorrectlyOtherwise() throws {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_RANDOM_SEED"].flatMap(UInt64.init) ?? 20_260_040
        let cases = ProcessInfo.processInfo.environment["UBIQFS_MERGE_CASES"].flatMap(Int.init) ?? 3000
        let showing = ProcessInfo.processInfo.environment["UBIQFS_MERGE_SHOW"] != nil
        var generator = TextGenerator(rng: SplitMix64(seed: seed))
        generator.maxLines = ProcessInfo.processInfo.environment["UBIQFS_MERGE_LINES"].flatMap(Int.init) ?? generator.maxLines
        // The controls' own choices, so that the cases do not depend on the merges.
        var controlChoices = SplitMix64(seed: ~seed)
        let git = try GitMergeFile()
        defer { git.remove() }
        var tally = Tally()
        for index in 0..<cases {
            let (base, ours, theirs) = generator.sides()
            let failure = { (what: String) -> Void in
                Issue.record("""
                    seed \(seed) case \(index): \(what)
                      base:   \(String(decoding: base.bytes, as: UTF8.self).debugDescription)
                      ours:   \(String(decoding: ours.bytes, as: UTF8.self).debugDescription)
                      theirs: \(String(decoding: theirs.bytes, as: UTF8.self).debugDescription)
                    replay with UBIQFS_RANDOM_SEED=\(seed)
                    """)
            }
            let show = { (what: String) -> Void in
                guard showing else { return }
                print("case \(index): \(what)\n  base \(Self.show(base.bytes))\n  ours \(Self.show(ours.bytes))\n  theirs \(Self.show(theirs.bytes))")
            }
            guard try check(base.bytes, ours.bytes, theirs.bytes, git: git, rng: &controlChoices, tally: &tally, failure: failure, show: show) else {
                return
            }
        }
        print("GitMergeOracleTests: seed \(seed), \(tally.summary)")
        // Agreement with git in the vast majority of its merges; never a wrong merge (above).
        #expect(tally.same * 100 >= tally.gitClean * 99)
        #expect(tally.bothConflict * 100 >= tally.gitConflicts * 99)
        // The generator reaches both outcomes, and the checker is neither blind nor unfair.
        #expect(tally.gitClean > cases / 4 && tally.gitConflicts > cases / 10)
        #expect(tally.gitAccepted * 100 >= tally.gitClean * 99)
        #expect(tally.gitOurs.0 * 100 >= tally.gitOurs.1 * 95 && tally.gitUnion.0 * 100 >= tally.gitUnion.1 * 95)
        #expect(tally.mutated.0 * 100 >= tally.mutated.1 * 90)
    }

    /// One case: our merge both ways round, git's, the checks and the controls; false after
    /// a failure.
    func check(
        _ base: [UInt8], _ ours: [UInt8], _ theirs: [UInt8], git: GitMergeFile, rng: inout SplitMix64, tally: inout Tally,
        failure: (String) -> Void, show: (String) -> Void
    ) throws -> Bool {
        let merged = TextMerge.merge(base: base, ours: ours, theirs: theirs)
        let swapped = TextMerge.merge(base: base, ours: theirs, theirs: ours)
        guard merged == swapped else {
            failure("not symmetric: \(Self.show(merged)) with ours first, \(Self.show(swapped)) with theirs first")
            return false
        }
        let checker = MergeChecker(base: base, ours: ours, theirs: theirs)
        if let merged, !checker.accepts(merged) {
            failure("a wrong merge: \(Self.show(merged))")
            return false
        }
        let fromGit = try git.merge(base: base, ours: ours, theirs: theirs)
        tally.cases += 1
        if fromGit.conflicts == 0 {
            tally.gitClean += 1
            if checker.accepts(fromGit.text) { tally.gitAccepted += 1 }
            if merged == fromGit.text {
                tally.same += 1
            } else if merged != nil {
                tally.otherMerge += 1
                show("another merge than git's \(Self.show(fromGit.text)): \(Self.show(merged))")
            } else {
                tally.weConflict += 1
                if checker.anyMergeExists() { tally.weConflictThoughMergeExists += 1 }
                show("no merge; git's: \(Self.show(fromGit.text))")
            }
        } else {
            tally.gitConflicts += 1
            if merged != nil {
                tally.weMerge += 1
                show("git conflicts (\(fromGit.conflicts)); ours: \(Self.show(merged))")
            } else {
                tally.bothConflict += 1
            }
            for resolution in [GitMergeFile.Resolution.ours, .union] {
                let resolved = try git.merge(base: base, ours: ours, theirs: theirs, resolving: resolution)
                let rejected = checker.accepts(resolved.text) ? 0 : 1
                if resolution == .ours { tally.gitOurs = (tally.gitOurs.0 + rejected, tally.gitOurs.1 + 1) }
                if resolution == .union { tally.gitUnion = (tally.gitUnion.0 + rejected, tally.gitUnion.1 + 1) }
                if rejected == 0 { show("git \(resolution.rawValue) accepted: \(Self.show(resolved.text))") }
            }
        }
        if let merged, let mutant = Self.mutant(of: merged, &rng) {
            tally.mutated = (tally.mutated.0 + (checker.accepts(mutant) ? 0 : 1), tally.mutated.1 + 1)
        }
        return true
    }

    /// A merge with one line dropped, doubled, or swapped with a different neighbour.
    static func mutant(of text: [UInt8], _ rng: inout SplitMix64) -> [UInt8]? {
        var lines = MergeChecker.lines(text)
        guard !lines.isEmpty else { return nil }
        let at = rng.below(lines.count)
        switch rng.below(3) {
        case 0: lines.remove(at: at)
        case 1: lines.insert(lines[at], at: at)
        default:
            guard let other = [at + 1, at - 1].first(where: { lines.indices.contains($0) && lines[$0] != lines[at] }) else { return nil }
            lines.swapAt(at, other)
        }
        return Array(lines.joined())
    }

    static func show(_ text: [UInt8]?) -> String {
        text.map { String(decoding: $0, as: UTF8.self).debugDescription } ?? "nil"
    }
}
