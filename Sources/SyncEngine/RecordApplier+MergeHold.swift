import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Another device's new version of a file this device edited too: held for the merge job
/// (`SyncEngine.settleMerges`) instead of split into a conflict copy at once, and applied
/// with the merged content as this device's edit (`applyMerged`), or by the usual rules
/// when the merge cannot be made (`applyHeld`, with the reason).
extension RecordApplier {
    /// The path a merge hold waits for, when `operation` is a content change of a file
    /// edited here that may merge: a kind of merge on, the edit's content here (not partly),
    /// no program writing it, both sides changed since the version they shared, the change
    /// no move, and the file not inside a `.git` folder. Nil otherwise (the usual rules: a
    /// conflict copy). A side too large is held too: the merge job refuses it at once,
    /// before reading it, and the conflict says why.
    func mergeWait(_ operation: JournalOperation) throws -> String? {
        guard mayMerge, case .upsert(let item) = operation, item.kind == .file,
              let row = try ItemRow.find(id: item.id, db), !row.deleted, !row.isIgnored, row.itemKind == .file,
              row.dirtyFlags.contains(.content), row.contentState == .local, row.baseSeq > 0,
              !activity.hasWriters(row.inode), let base = try BaseSnapshots.find(item.id, db), base.kind == .file,
              !(item.blocks ?? []).sameContent(as: base.blocks ?? []),
              // A move waits for nothing: the rest of the record (a folder's delete) counts on it.
              item.parent == base.parent, item.name == base.name
        else { return nil }
        let path = try ItemRow.path(of: row.inode, db)
        // A repository's own files (refs, packed-refs, config) are git's to reconcile: a line
        // merge could make a state git never wrote.
        guard !path.split(separator: "/").contains(".git") else { return nil }
        return path
    }

    /// Applies a change held for a merge whose result is in the file's cache file now
    /// (`size` bytes, `mtime`): the other device's version becomes the committed base and a
    /// version, its metadata changes are taken, and the content stays this device's edit.
    mutating func applyMerged(_ change: HeldChange, size: Int64, mtime: Int64) throws {
        mergedContent = (size, mtime)
        defer { mergedContent = nil }
        try applyHeld(change)
    }

    /// Says so: in `ubiqfs status`, and to whoever watches (`merged`).
    mutating func noteMerged(_ ino: Inode, _ message: String) throws {
        outcome.merges.append(message)
        note(.merged, ino, detail: message)
        try resolveEvents()
    }
}
