import Foundation
import Inodes
import ItemModel

/// A commit whose put-if-absent has no known outcome: the reply was lost, or a retry of a
/// write that did land saw "already there". The pull decides: if the record at `seq`
/// carries this `commit` id it is ours, and its rows are settled as if the reply had come
/// (never committed again, which would also make a false conflict elsewhere). Persisted
/// before the write, so a crash in between is decided the same way at the next start.
struct UncertainCommit: Codable, Sendable {
    var seq: UInt64
    var commit: String
    var time: Int64
    /// Each item's change generation when the plan was read: rows changed since stay dirty.
    var generations: [String: Int64]
    /// Items whose new name went with their committed content (`PushPlan.Entry.nameOnly`).
    var nameOnly: [String]?
    /// The root's change generation, when the record carries its attributes.
    var rootChangeGen: Int64?
    /// The plan itself, while this process lives (it knows the write generations too).
    var plan: PushPlan?

    enum CodingKeys: String, CodingKey { case seq, commit, time, generations, nameOnly, rootChangeGen }

    init(seq: UInt64, record: JournalRecord, plan: PushPlan) {
        self.seq = seq
        commit = record.commit
        time = record.time
        self.plan = plan
        generations = Dictionary(plan.entries.map { ($0.itemID.rawValue, $0.changeGen) }, uniquingKeysWith: { first, _ in first })
        let nameOnly = plan.entries.filter(\.nameOnly).map(\.itemID.rawValue)
        self.nameOnly = nameOnly.isEmpty ? nil : nameOnly
        rootChangeGen = plan.rootChangeGen
    }

    /// The plan to settle with: the one in memory, or one rebuilt from the record (after a
    /// restart no write is in flight, so an unchanged generation means unchanged content).
    func settlingPlan(for record: JournalRecord, inode: (ItemID) -> Inode?) -> PushPlan {
        if let plan { return plan }
        var rebuilt = PushPlan()
        rebuilt.rootChangeGen = record.root == nil ? nil : rootChangeGen
        for operation in record.ops {
            guard let ino = inode(operation.itemID) else { continue }
            let change: PushPlan.Change = switch operation {
            case .upsert(let item): .upsert(item)
            case .delete(let id): .delete(id)
            }
            rebuilt.entries.append(PushPlan.Entry(
                ino: ino, change: change, changeGen: generations[operation.itemID.rawValue] ?? -1, upload: nil,
                nameOnly: nameOnly?.contains(operation.itemID.rawValue) ?? false
            ))
        }
        return rebuilt
    }
}
