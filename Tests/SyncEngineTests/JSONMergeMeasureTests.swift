import Foundation
import ItemModel
@testable import SyncEngine
import Testing

/// Whether JSON files should merge by default (issue 40: "decide with measurements"):
/// settings files as editors write them (one key a line), each side changing, adding or
/// removing a few keys, and the line merge (`SyncEngine.jsonMerge`) against the oracle,
/// a merge key by key. `UBIQFS_JSON_SEED` replays.
@Suite struct JSONMergeMeasureTests {
    struct Tally: CustomStringConvertible {
        var cases = 0, keysMerge = 0, keysConflict = 0
        /// Where the keys merge: the line merge gives the same object, or a copy, or another object.
        var same = 0, copy = 0, wrong = 0
        /// Where the keys conflict: the line merge gives a copy too, or merges anyway.
        var bothCopy = 0, mergedAnyway = 0
        var description: String {
            "\(cases) cases: keys merge in \(keysMerge) (line merge: the same object \(same), a copy \(copy), another object \(wrong)); "
                + "keys conflict in \(keysConflict) (line merge: a copy \(bothCopy), merged anyway \(mergedAnyway))"
        }
    }

    typealias Object = [(key: String, value: Int)]

    static func text(_ object: Object) -> [UInt8] {
        let lines = object.enumerated().map { index, pair in "  \"\(pair.key)\": \(pair.value)" + (index < object.count - 1 ? "," : "") }
        return Array(("{\n" + lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n") + "}\n").utf8)
    }

    static func edit(_ object: Object, _ tag: Int, _ rng: inout SplitMix64) -> Object {
        var edited = object
        for step in 0..<Int.random(in: 1...2, using: &rng) {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0 where !edited.isEmpty: edited[Int.random(in: 0..<edited.count, using: &rng)].value = tag * 10 + step
            case 1 where edited.count > 1: edited.remove(at: Int.random(in: 0..<edited.count, using: &rng))
            default:
                let at = Int.random(in: 0...edited.count, using: &rng)
                edited.insert((key: "k\(tag)x\(step)", value: step), at: at)
            }
        }
        return edited
    }

    /// The oracle: each key takes the side that changed it; a key both changed differently
    /// is a conflict (nil).
    static func keyMerge(base: Object, ours: Object, theirs: Object) -> [String: Int]? {
        let (b, o, t) = (Dictionary(uniqueKeysWithValues: base.map { ($0.key, $0.value) }), Dictionary(uniqueKeysWithValues: ours.map { ($0.key, $0.value) }),
                         Dictionary(uniqueKeysWithValues: theirs.map { ($0.key, $0.value) }))
        var merged = t
        for key in Set(b.keys).union(o.keys) where o[key] != b[key] && t[key] != o[key] {
            guard t[key] == b[key] else { return nil }
            merged[key] = o[key]
        }
        return merged
    }

    static func object(_ bytes: [UInt8]) -> [String: Int]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Int]
    }

    /// The tally of `merge` over 3,000 generated cases.
    static func measure(seed: UInt64, _ merge: ([UInt8], [UInt8], [UInt8]) -> [UInt8]?) -> Tally {
        var rng = SplitMix64(seed: seed)
        var tally = Tally()
        for _ in 0..<3000 {
            let base: Object = (0..<Int.random(in: 2...12, using: &rng)).map { (key: "key\($0)", value: $0) }
            let (ours, theirs) = (Self.edit(base, 1, &rng), Self.edit(base, 2, &rng))
            tally.cases += 1
            let merged = merge(Self.text(base), Self.text(ours), Self.text(theirs)).flatMap(Self.object)
            if let keys = Self.keyMerge(base: base, ours: ours, theirs: theirs) {
                tally.keysMerge += 1
                if merged == nil { tally.copy += 1 } else if merged == keys { tally.same += 1 } else { tally.wrong += 1 }
            } else {
                tally.keysConflict += 1
                if merged == nil { tally.bothCopy += 1 } else { tally.mergedAnyway += 1 }
            }
        }
        return tally
    }

    @Test func lineMergesOfSettingsAgainstKeyMerges() {
        let seed = ProcessInfo.processInfo.environment["UBIQFS_JSON_SEED"].flatMap(UInt64.init) ?? 40_040
        let tally = Self.measure(seed: seed) { base, ours, theirs in
            guard case .merged(let bytes) = SyncEngine.jsonMerge(base: base, ours: ours, theirs: theirs) else { return nil }
            #expect(Self.object(bytes) != nil, "a line merge that is not a JSON object, seed \(seed)")
            return bytes
        }
        print("JSONMergeMeasureTests (seed \(seed)): \(tally)")
        // What JSON merging rests on (SEMANTICS, "Which kinds of file merge"): never another
        // object than the key merge, never a merge where keys conflict; a copy in about half
        // the cases a key merge would merge, which is why it is off by default.
        #expect(tally.wrong == 0 && tally.mergedAnyway == 0 && tally.same > 0 && tally.copy > 0, "\(tally)")
        // The control: a merge that takes one side whole is seen to be wrong.
        let control = Self.measure(seed: seed) { _, ours, _ in ours }
        #expect(control.wrong > 0 && control.mergedAnyway > 0, "\(control)")
    }
}
