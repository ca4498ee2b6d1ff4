import DatabaseMerge
import Foundation
import GRDB
import ItemModel
import Testing

/// The merge against `MergeModel` on generated cases: random schemas (every kind of key,
/// foreign keys, UNIQUE columns, triggers, AUTOINCREMENT), random rows and random changes on
/// each side, a quarter in WAL mode. Each merge must give the model's contents exactly
/// (checked with `integrity_check` by the sqlite3 program), its report and, merged again, the
/// same bytes; or fail with the model's code, leaving nothing. Controls show the checker is
/// fair: a merge that lost one of ours' inserts, theirs' file passed off as the merge, and a
/// merge in which a trigger fired once more are all rejected. A seed replays a run:
/// `UBIQFS_DATABASE_SEED=<seed>`; `UBIQFS_DATABASE_CASES` sets how many cases (200).
@Suite struct RandomMergeTests {
    struct Tally {
        var merged = 0, conflicts = 0, integrity = 0, wal = 0
        /// Merges whose result has foreign key violations one side had already.
        var carriedViolations = 0
        /// Controls: (rejected, tried); each kind tried on the first `controls` cases it fits.
        static let controls = 30
        var droppedInsert = (0, 0), theirsAsMerge = (0, 0), triggerAgain = (0, 0)
    }

    /// One generated case: its schema and the SQL that made each side, for a failure message.
    struct Case {
        let schema: [TableSpec]
        let base: [String], ours: [String], theirs: [String]

        var description: String {
            """
            schema:
            \(schema.map(\.createSQL).joined())base: \(base.joined(separator: "; "))
            ours: \(ours.joined(separator: "; "))
            theirs: \(theirs.joined(separator: "; "))
            """
        }
    }

    @Test func randomMergesMatchTheModel() throws {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_DATABASE_SEED"].flatMap(UInt64.init) ?? 20_260_041
        let cases = ProcessInfo.processInfo.environment["UBIQFS_DATABASE_CASES"].flatMap(Int.init) ?? 200
        var generator = CaseGenerator(rng: SplitMix64(seed: seed))
        var tally = Tally()
        for index in 0..<cases {
            let fixture = try DatabaseFixture()
            defer { fixture.remove() }
            let schema = generator.schema()
            let wal = generator.rng.chance(25)
            let generated = Case(schema: schema, base: generator.baseRows(schema), ours: generator.changes(schema), theirs: generator.changes(schema))
            try fixture.execute((wal ? "PRAGMA journal_mode = WAL;" : "") + schema.map(\.createSQL).joined(), in: fixture.base)
            try fixture.executeEach(generated.base, in: fixture.base)
            try fixture.branch()
            try fixture.executeEach(generated.ours, in: fixture.ours)
            try fixture.executeEach(generated.theirs, in: fixture.theirs)
            tally.wal += wal ? 1 : 0
            let problems = try check(fixture, schema: schema, tally: &tally)
            if !problems.isEmpty {
                Issue.record("seed \(seed) case \(index): \(problems.joined(separator: "\n"))\n\(generated.description)\nreplay with UBIQFS_DATABASE_SEED=\(seed)")
                return
            }
        }
        print("RandomMergeTests: seed \(seed), \(cases) cases: \(tally)")
        // The generator reaches every outcome, and the checker is neither blind nor unfair.
        #expect(tally.merged * 4 >= cases && tally.conflicts * 10 >= cases && tally.integrity > 0 && tally.carriedViolations > 0)
        for control in [tally.droppedInsert, tally.theirsAsMerge, tally.triggerAgain] {
            #expect(control.0 == control.1 && control.1 > 0)
        }
    }

    /// The merge of one case against the model; what is wrong with it.
    private func check(_ fixture: DatabaseFixture, schema: [TableSpec], tally: inout Tally) throws -> [String] {
        let (base, ours, theirs) = try (
            Snapshot(path: fixture.base, schema: schema), Snapshot(path: fixture.ours, schema: schema), Snapshot(path: fixture.theirs, schema: schema)
        )
        let result = Result { () throws(DatabaseMergeError) in try fixture.merge() }
        switch (MergeModel(schema: schema).outcome(base: base, ours: ours, theirs: theirs), result) {
        case (.merged(let expected, let report, let applied), .success(let actual)):
            tally.merged += 1
            let model = MergeModel(schema: schema)
            tally.carriedViolations += schema.contains { !model.violations($0, expected).isEmpty } ? 1 : 0
            var problems = try MergeChecker(schema: schema).problems(fixture.output, expected: expected)
            if actual != report { problems.append("report \(actual), expected \(report)") }
            _ = try fixture.merge(into: fixture.directory + "/again.db")
            if try Data(contentsOf: URL(fileURLWithPath: fixture.output)) != Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/again.db")) {
                problems.append("merged again, other bytes")
            }
            try runControls(fixture, schema: schema, expected: expected, applied: applied, tally: &tally)
            return problems
        case (.failure(let code, let table), .failure(let error)):
            tally.conflicts += code == .conflict ? 1 : 0
            tally.integrity += code == .integrity ? 1 : 0
            var problems: [String] = []
            if error.code != code || !error.message.hasPrefix("table \(table):") { problems.append("failed with \(error), expected \(code) in table \(table)") }
            if try fixture.strayFiles() != [] || FileManager.default.fileExists(atPath: fixture.output) { problems.append("files left: \(try fixture.strayFiles())") }
            return problems
        case (.merged, .failure(let error)):
            return ["failed with \(error), expected a merge"]
        case (.failure(let code, let table), .success(let report)):
            return ["merged (\(report)), expected \(code) in table \(table)"]
        }
    }

    /// Wrong merges made from the right one; the checker must reject each.
    private func runControls(_ fixture: DatabaseFixture, schema: [TableSpec], expected: Snapshot, applied: [MergeModel.Change], tally: inout Tally) throws {
        let checker = MergeChecker(schema: schema)
        let control = fixture.directory + "/control.db"
        let judge = { (sql: String, count: inout (Int, Int)) throws in
            guard count.1 < Tally.controls else { return }
            try? FileManager.default.removeItem(atPath: control)
            try FileManager.default.copyItem(atPath: fixture.output, toPath: control)
            try fixture.execute(sql, in: control)
            count.1 += 1
            count.0 += try checker.problems(control, expected: expected).isEmpty ? 0 : 1
        }
        if let insert = applied.first(where: { $0.kind == .insert }) {
            try judge("DELETE FROM \(insert.table.name) WHERE \(insert.table.matching(insert.key))", &tally.droppedInsert)
        }
        if let counted = expected.tables.sorted(by: { $0.key < $1.key }).lazy
            .compactMap({ name, rows in schema.first { $0.name == name && $0.counted }.flatMap { table in rows.keys.first.map { (table, $0) } } }).first {
            try judge("UPDATE \(counted.0.name) SET a = a WHERE \(counted.0.matching(counted.1))", &tally.triggerAgain)
        }
        if !applied.isEmpty && tally.theirsAsMerge.1 < Tally.controls {
            tally.theirsAsMerge.1 += 1
            tally.theirsAsMerge.0 += try checker.problems(fixture.theirs, expected: expected).isEmpty ? 0 : 1
        }
    }
}
