import Foundation
import ItemModel
import Merging
import MetadataStore

/// The merge itself, by method (`MergeMethod`), off the cooperative pool: the merged bytes,
/// or why there are none (the file keeps the conflict copy, with that reason).
extension SyncEngine {
    enum MergeResult: Sendable {
        case merged([UInt8])
        case refused(String)
    }

    func merge(_ method: MergeMethod, base: [UInt8], ours: [UInt8], theirs: [UInt8]) async throws(SyncError) -> MergeResult {
        switch method {
        case .text: await OffloadedWork.run { Self.textMerge(base: base, ours: ours, theirs: theirs) }
        case .json: await OffloadedWork.run { Self.jsonMerge(base: base, ours: ours, theirs: theirs) }
        case .sqlite: try await databaseMerge(base: base, ours: ours, theirs: theirs)
        }
    }

    static func textMerge(base: [UInt8], ours: [UInt8], theirs: [UInt8]) -> MergeResult {
        do throws(MergeError) {
            return .merged(try TextMerge.merged(base: base, ours: ours, theirs: theirs))
        } catch {
            return .refused(reason(error))
        }
    }

    /// A JSON file merges line by line, as text, and only into valid JSON when both sides
    /// are: a merge of lines can break the syntax (two items added at an array's end).
    static func jsonMerge(base: [UInt8], ours: [UInt8], theirs: [UInt8]) -> MergeResult {
        guard isJSON(ours), isJSON(theirs) else { return .refused("not valid JSON") }
        let result = textMerge(base: base, ours: ours, theirs: theirs)
        if case .merged(let bytes) = result, !isJSON(bytes) { return .refused("the merged lines would not be valid JSON") }
        return result
    }

    private static func isJSON(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
    }

    static func reason(_ error: MergeError) -> String {
        switch error.code {
        case .notText: "not text"
        case .overlap: "both changed the same lines"
        case .tooManyChanges: "too many changes to compare"
        }
    }

    /// Why a database here is not whole in its file: a write-ahead log or a rollback
    /// journal beside it with content (its program has not checkpointed or committed). A
    /// journal's size is its cache file's when it is here (written here, not yet pushed).
    func journalRefusal(_ row: ItemRow) async throws(SyncError) -> String? {
        guard let parent = row.parent else { return nil }
        let names = ["-wal", "-journal"].map { row.itemName.description + $0 }
        let journals = try await calls.read("cannot read the folder of \(row.itemName)") { db in
            try names.compactMap { name in try ItemRow.child(of: parent, named: ByteString(Array(name.utf8)), db).map { (name, $0) } }
        }
        for (name, journal) in journals where (cache.status(journal.inode)?.size ?? journal.size) > 0 {
            return name.hasSuffix("-wal") ? "its write-ahead log \(name) is not checkpointed" : "its rollback journal \(name) is beside it"
        }
        return nil
    }
}
