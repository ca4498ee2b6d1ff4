import Inodes
import ItemModel
import Merging
import MetadataStore

/// The `.ubiqfsnomerge` files above a file held for a merge (`NoMergeRules`), read as this
/// device has them: a placeholder's committed content is fetched (they are small).
extension SyncEngine {
    /// A rule file larger than this is not read: the file keeps the copy, with the reason.
    static let largestRuleFile: Int64 = 1 << 20

    /// Whether the rules let the file at `row` merge: nil if they do, else the attempt's
    /// outcome (`.unmerged` with the rule's reason, or `.later` if a rule cannot be fetched now).
    func ruleRefusal(_ row: ItemRow) async throws(SyncError) -> MergeAttempt? {
        let name = ByteString(Array(NoMergeRules.fileName.utf8))
        let (path, files) = try await calls.read("cannot read the merge rules above \(row.itemName)") { db in
            var files: [(folder: [UInt8], rule: ItemRow)] = []
            var folder = row.parent
            // Bounded as `ItemRow.path` is: parents come from the store too.
            for _ in 0..<10_000 {
                guard let ino = folder else { break }
                if let rule = try ItemRow.child(of: ino, named: name, db), rule.itemKind == .file, let path = try ItemRow.pathBytes(of: ino, db) {
                    files.append((Array(path.dropFirst()), rule))
                }
                folder = ino == .root ? nil : try ItemRow.find(ino: ino, db)?.parent
            }
            return (try ItemRow.pathBytes(of: row.inode, db).map { Array($0.dropFirst()) }, files)
        }
        guard let path else { return .unmerged(nil) }
        var rules = NoMergeRules()
        for (folder, rule) in files {
            // The cache file's size when it is here: the row's lags behind an edit not pushed.
            guard (cache.status(rule.inode)?.size ?? rule.size) <= Self.largestRuleFile else {
                return .unmerged("\(NoMergeRules.fileName) of /\(String(decoding: folder, as: UTF8.self)) is too large to read")
            }
            do {
                let contents = try await ruleContents(rule)
                rules.add(folder: folder, contents: contents)
            } catch {
                if error.code == .unreachable || error.code == .cancelled { return .later }
                return .unmerged("\(NoMergeRules.fileName) of /\(String(decoding: folder, as: UTF8.self)) cannot be read: \(error.message)")
            }
        }
        return rules.reason(for: path).map { .unmerged($0) }
    }

    private func ruleContents(_ rule: ItemRow) async throws(SyncError) -> [UInt8] {
        if rule.contentState == .local, let bytes = readLocal(rule.inode) { return bytes }
        return try await content(rule.blockList, of: rule.itemName.description)
    }
}
