import Foundation
import GRDB
import Inodes
import ItemModel
import MetadataStore

/// Applies committed journal operations to this device's state inside one database
/// transaction. All conflict policy lives here (the rebase of the design note): local
/// changes not yet committed are observations in the rows, and each remote operation is
/// applied on top of them by these rules:
/// - both edited a file's content: the committed version keeps the name and id; the local
///   version becomes a new item, `name (conflict from DEVICE date).ext`, beside it;
/// - metadata is merged field by field against the base: a field changed here keeps its
///   local value (pushed next), every other field follows the record;
/// - edit vs delete: the edit wins, the item (and the folders above it) come back;
/// - two items with one name: the one not yet committed (or not named by the record) is renamed `name (2)`;
/// - a move that would make a cycle puts the moved folder at the root instead;
/// - a change that would replace or delete a file a program here has open for writing (and
///   has not written) is held for that item alone (`HeldChanges`), and applied by these
///   rules once the writer closes (`applyHeld`); the rest of the record is applied now.
struct RecordApplier {
    let db: Database
    let device: DeviceIdentity
    let activity: any LocalActivity
    let now: Int64
    /// Someone watches (the watch API): collect events, with paths.
    let watched: Bool
    var outcome = ApplyOutcome()
    private var pending: [PendingEvent] = []
    /// Whether any operation of this record may be held: something is held already, or a
    /// program has a file open for writing. Checked once per record, so a record applied
    /// with no writer anywhere costs no checks per operation.
    var mayHold = false
    /// Whether this record's changes may wait for a merge (`mergeWait`): merging on and a
    /// file edited here; when not, no change looks its item up for it.
    var mayMerge = false
    /// The record being applied: who committed it and when, for file versions.
    var committer = (device: "", time: Int64(0))
    /// Ids that an operation later in the current record places or deletes (a swap, a
    /// rename over an item the record also deletes): one of them in the way is not a clash.
    var comingLater: [ItemID: Int] = [:]
    /// The ids the current record deletes.
    var deletes: Set<ItemID> = []
    /// The places of the links the current record deletes, by the item each named: an
    /// upsert that moves the item to one of them only removes a name (`isNameRemoval`).
    var deletedLinkPlaces: [ItemID: [BaseSnapshots.Place]] = [:]
    /// Items stepped aside to a private name for such an operation, with their name.
    var displaced: [Inode: (parent: Inode, name: ByteString)] = [:]
    /// The record's deletes, for the trash (unless `keepsTrash` is false).
    var trash = TrashCollector()
    var keepsTrash = true
    /// False for a checkpoint's catch-up, whose items carry whole lists.
    var expandsSplices = true
    /// The SHA-256 of the record's bytes as stored (`SettingKey.lastRecordHash`).
    var recordHash: String?
    /// The kinds of file that merge (format 4 and later; nil: none), for `mergeWait`.
    var merging: MergeKinds?
    /// Set while applying a change a merge took in (`applyMerged`): this device's edit, now
    /// the merged content, stays the file's content to be pushed; no conflict copy.
    var mergedContent: (size: Int64, mtime: Int64)?
    /// Why a change held for a merge was not merged, said with the conflict it makes.
    var notMerged: String?

    /// An event whose path is resolved once the whole record is applied (a later
    /// operation of the record may move the item's folder).
    private struct PendingEvent {
        var kind: ChangeEvent.Kind
        var ino: Inode
        var path: String?
        var from: String?
        var detail: String?
    }

    init(
        db: Database, device: DeviceIdentity, activity: any LocalActivity, now: Int64, watched: Bool = false,
        resurrected: [ItemID: Int64] = [:]
    ) {
        self.db = db
        self.device = device
        self.activity = activity
        self.now = now
        self.watched = watched
        outcome.resurrected = resurrected
    }

    mutating func note(_ kind: ChangeEvent.Kind, _ ino: Inode, path: String? = nil, from: String? = nil, detail: String? = nil) {
        guard watched else { return }
        pending.append(PendingEvent(kind: kind, ino: ino, path: path, from: from, detail: detail))
    }

    func currentPath(_ ino: Inode) throws -> String? {
        guard watched else { return nil }
        // A stepped-aside item is shown at the name it had.
        if let origin = displaced[ino], try ItemRow.find(ino: ino, db)?.itemName.bytes.first == 0 {
            let folder = try ItemRow.path(of: origin.parent, db)
            return (folder == "/" ? "" : folder) + "/" + origin.name.description
        }
        return try ItemRow.path(of: ino, db)
    }

    mutating func apply(_ stored: JournalRecord, seq: UInt64) throws {
        let expansion = expandsSplices ? try RecordSplices.expanded(stored, seq: seq, db) : RecordSplices.Expansion(record: stored)
        let record = expansion.record
        outcome.refused += expansion.refused
        outcome.applied = record
        try RecordSplices.note(record.ops, spliced: expansion.spliced, forgotten: expansion.forgotten, db)
        let own = record.device == device.id
        mayHold = try activity.hasAnyWriters || !HeldChanges.isEmpty(db)
        mayMerge = try merging.map { ($0.text || $0.sqlite || $0.json) && record.time != 0 } == true && ItemRow.hasPendingContent(db)
        committer = (record.deviceName, record.time)
        comingLater = [:]
        displaced = [:]
        for operation in record.ops { comingLater[operation.itemID, default: 0] += 1 }
        deletes = Set(record.ops.compactMap { operation in
            if case .delete(let id) = operation { id } else { nil }
        })
        deletedLinkPlaces = try Self.linkPlaces(deleting: deletes, db)
        for operation in record.ops {
            comingLater[operation.itemID]? -= 1
            if comingLater[operation.itemID] == 0 { comingLater[operation.itemID] = nil }
            switch operation {
            case .upsert(let raw):
                let item: ItemSnapshot
                do {
                    item = try RecordValidator.sanitized(raw)
                } catch {
                    outcome.refused.append("journal \(seq): \(error.message)")
                    continue
                }
                if try !own && hold(.upsert(item), seq: seq) { continue }
                try upsert(item, seq: seq, own: own)
            case .delete(let id):
                guard id.isWellFormed, id != .root else {
                    outcome.refused.append("journal \(seq): delete of malformed id refused")
                    continue
                }
                if try !own && hold(operation, seq: seq) { continue }
                try delete(id)
            }
        }
        try settleDisplaced()
        try take(merges: record, seq: seq)
        // A checkpoint's catch-up has no time: its deletes are found now.
        if keepsTrash { try trash.record(seq: seq, device: record.deviceName, time: record.time == 0 ? now : record.time, batch: record.batch, db) }
        try relocate(record.relocate ?? [], seq: seq)
        try take(record.settings, seq: seq)
        try take(root: record.root, seq: seq)
        if seq == 1 { try MetadataStore.setSetting(SettingKey.wholeHistory, "1", db) }
        try ContainerFormat.noteRecord(record.format, seq: seq, db)
        try MetadataStore.setSetting(SettingKey.lastSeq, String(seq), db)
        // Unknown (a refused record, a checkpoint's catch-up): the next one goes unchecked.
        if let recordHash { try MetadataStore.setSetting(SettingKey.lastRecordHash, recordHash, db) } else {
            try MetadataStore.removeSetting(SettingKey.lastRecordHash, db)
        }
        try resolveEvents()
    }

    /// A collector's blob moves: every reference kept here follows them (content and
    /// versions unchanged). A malformed move is refused alone.
    private mutating func relocate(_ moves: [BlobMove], seq: UInt64) throws {
        guard !moves.isEmpty else { return }
        let valid = moves.filter(\.isWellFormed)
        if valid.count < moves.count { outcome.refused.append("journal \(seq): \(moves.count - valid.count) malformed blob moves refused") }
        for change in try BlobRelocations.apply(valid, db) { outcome.held[change.itemID] = change }
    }

    /// The container's settings from this record on; out of range, refused (logged).
    private mutating func take(_ settings: ContainerSettings?, seq: UInt64) throws {
        guard let settings else { return }
        guard settings.retention.isValid else {
            outcome.refused.append("journal \(seq): settings refused: a retention out of range")
            return
        }
        try settings.makeCurrent(db)
        outcome.settingsChanged = true
    }

    /// The root's own attributes from this record on, merged with a change of them made
    /// here as a folder's metadata is; out of range, refused (logged).
    private mutating func take(root: RootAttributes?, seq: UInt64) throws {
        guard let root else { return }
        let sanitized: RootAttributes
        do { sanitized = try RecordValidator.sanitized(root) } catch {
            outcome.refused.append("journal \(seq): \(error.message)")
            return
        }
        if try RootState.take(sanitized, db) { outcome.invalidations.append(.inode(.root, data: false)) }
    }

    /// Events get their paths once everything is applied.
    mutating func resolveEvents() throws {
        for event in pending {
            let path = try event.path ?? ItemRow.path(of: event.ino, db)
            outcome.events.append(ChangeEvent(event.kind, path: path, from: event.from, origin: .remote, detail: event.detail))
        }
        pending = []
    }

    // MARK: Upsert

    /// The upsert's content as a version of its file (`FileVersions`), if it is new.
    func recordVersion(_ item: ItemSnapshot, seq: UInt64) throws {
        // A checkpoint does not say who committed each item, nor when: its mtime stands in.
        let fromCheckpoint = committer.time == 0
        try FileVersions.record(
            item, seq: seq, device: fromCheckpoint ? "(from a checkpoint)" : committer.device,
            time: fromCheckpoint ? item.mtime : committer.time, db
        )
    }

    mutating func upsert(_ item: ItemSnapshot, seq: UInt64, own: Bool) throws {
        if !own { outcome.changedItems.append(item.id) }
        let base = try BaseSnapshots.find(item.id, db)
        let existing = try ItemRow.find(id: item.id, db)
        // A folder deleted here whose time alone moved there (names changed in it): no edit,
        // so it stays deleted, and so do the folders above it; its delete goes next. So
        // does an item that only lost a name there (it took one of its links' place).
        if !own, let existing, existing.deleted, let base,
           (existing.itemKind == .directory && Self.differsOnlyInTime(item, from: base)) || isNameRemoval(item, base: base) {
            try BaseSnapshots.set(item, seq: seq, db)
            return
        }
        // An item this device moved elsewhere stays there: the record's folder, deleted
        // here, receives nothing and stays deleted (its delete goes next).
        var staysMovedHere = false
        if !own, let row = existing, !row.deleted, row.itemKind == item.kind {
            let conflict = row.dirtyFlags.contains(.content) && item.kind == .file
                && !(item.blocks ?? []).sameContent(as: base?.blocks ?? row.blockList)
            staysMovedHere = try !conflict && keepsLocalPlace(row, base: base)
        }
        guard let parent = try folder(of: item, seq: seq, bringBack: !staysMovedHere) else { return }
        if let existing, existing.itemKind != item.kind {
            outcome.refused.append("journal \(seq): \(item.name) refused: an item cannot change from \(existing.itemKind.rawValue) to \(item.kind.rawValue)")
            return
        }
        if item.kind == .link, try !acceptsLink(item, existing: existing, seq: seq) { return }
        try BaseSnapshots.set(item, seq: seq, db)
        try recordVersion(item, seq: seq)
        guard var row = existing else {
            try insert(item, parent: parent, seq: seq)
            return
        }
        if row.deleted { return try undelete(&row, as: item, parent: parent, seq: seq) }
        let localFlags = row.dirtyFlags
        let contentChanged = item.kind == .file && !(item.blocks ?? []).sameContent(as: base?.blocks ?? row.blockList)
        if own { return try settleOwn(&row, item, parent: parent, seq: seq) }
        if let mergedContent, localFlags.contains(.content) {
            try merge(&row, item, base: base, parent: parent, contentChanged: false)
            (row.size, row.mtime) = mergedContent
            row.baseSeq = Int64(seq)
            try row.update(db)
            outcome.invalidations.append(.inode(row.inode, data: true))
            return
        }
        if localFlags.contains(.content) && contentChanged {
            return try splitConflict(&row, remote: item, base: base, parent: parent, seq: seq)
        }
        try merge(&row, item, base: base, parent: parent, contentChanged: contentChanged)
        row.baseSeq = Int64(seq)
        try row.update(db)
    }

    /// The folder an upsert goes into, brought back if it was deleted here (a remote change
    /// into it wins) unless `bringBack` is false (the item stays elsewhere); nil, and the
    /// item refused, if there is none.
    mutating func folder(of item: ItemSnapshot, seq: UInt64, bringBack: Bool = true) throws -> Inode? {
        guard var parent = item.parent == .root ? try ItemRow.find(ino: Inode.root, db) : try ItemRow.find(id: item.parent, db) else {
            outcome.refused.append("journal \(seq): \(item.name) refused: its folder \(item.parent) does not exist")
            return nil
        }
        guard parent.itemKind == .directory else {
            outcome.refused.append("journal \(seq): \(item.name) refused: its parent is not a folder")
            return nil
        }
        if parent.deleted && bringBack { try resurrect(&parent) }
        return parent.inode
    }

    /// Deleted here (pushed or not) and changed there: the change wins. Placed while still
    /// deleted, so whatever took its name here steps aside.
    mutating func undelete(_ row: inout ItemRow, as item: ItemSnapshot, parent: Inode, seq: UInt64) throws {
        try place(&row, parent: parent, name: item.name)
        row.deleted = false
        row.dirtyFlags = []
        take(item, into: &row, content: true)
        if row.itemKind == .file {
            // What this device wrote before its delete is gone, even when the delete
            // already dropped the content (a purge): so is the mark that it changed.
            row.contentState = .placeholder
            outcome.droppedContent.append(row.inode)
        }
        row.baseSeq = Int64(seq)
        try row.update(db)
        try StoredXattrs.replace(row.inode, with: item.xattrs ?? [:], db)
        outcome.invalidations.append(.inode(row.inode, data: true))
        note(.created, row.inode)
    }

    /// Our own commit, seen again after a lost reply or a crash: it is the base now.
    private mutating func settleOwn(_ row: inout ItemRow, _ item: ItemSnapshot, parent: Inode, seq: UInt64) throws {
        let localFlags = row.dirtyFlags
        if try localFlags.contains(.metadata) && matchesMetadata(row, item, parent: parent) {
            row.dirtyFlags.remove(.metadata)
        }
        if localFlags.contains(.times) && row.mtime == item.mtime { row.dirtyFlags.remove(.times) }
        if !localFlags.contains(.content) { row.blockList = item.blocks ?? [] }
        row.baseSeq = Int64(seq)
        try row.update(db)
    }

    /// Three-way merge of metadata against the committed base: what was changed here
    /// (differs from the base) stays and is pushed next; everything else follows the
    /// record. Content follows it unless it was changed here (a conflict, settled before).
    private mutating func merge(_ row: inout ItemRow, _ item: ItemSnapshot, base: ItemSnapshot?, parent: Inode, contentChanged: Bool) throws {
        let (localMetadata, localContent) = (row.dirtyFlags.contains(.metadata), row.dirtyFlags.contains(.content))
        let localXattrs = try StoredXattrs.all(of: row.inode, db)
        // A folder's time alone follows the names changing in it, which have events of their own.
        let timeDiffers = row.mtime != item.mtime && item.kind != .directory
        let metadataDiffers = UInt32(row.mode) != item.mode || timeDiffers || localXattrs != (item.xattrs ?? [:])
        let movedHere = try keepsLocalPlace(row, base: base)
        let modeChangedHere = localMetadata && (base == nil || UInt32(row.mode) != base?.mode)
        let mtimeChangedHere = (localMetadata || row.dirtyFlags.contains(.times)) && (base == nil || row.mtime != base?.mtime)
        let xattrsChangedHere = localMetadata && (base == nil || localXattrs != (base?.xattrs ?? [:]))
        if !movedHere && (row.parent != parent || row.itemName != item.name) {
            try follow(move: &row, to: parent, name: item.name)
        }
        // A name removed here that the record already has (the item is where it puts it, as
        // when the other device removed the same name): nothing of it is left to push. Pushed,
        // the same snapshot again would read elsewhere as an edit, and bring back an item
        // another device deleted.
        if row.dirtyFlags.subtracting(.times) == [.metadata, .nameRemoved] && row.parent == parent && row.itemName == item.name {
            row.dirtyFlags.subtract([.metadata, .nameRemoved])
        }
        if !modeChangedHere { row.mode = Int64(item.mode) }
        if !mtimeChangedHere { row.mtime = item.mtime }
        if !xattrsChangedHere { try StoredXattrs.replace(row.inode, with: item.xattrs ?? [:], db) }
        row.symlinkTarget = item.target
        row.ctime = now
        if contentChanged && !localContent {
            row.blockList = item.blocks ?? []
            row.size = item.size
            row.mtime = item.mtime
            if row.contentState != .placeholder {
                row.contentState = .placeholder
                outcome.droppedContent.append(row.inode)
            }
            outcome.placeholders.append(row.inode)
            outcome.invalidations.append(.inode(row.inode, data: true))
            note(.modified, row.inode)
        } else {
            // The same bytes in another place (a move the writer did not know of): the
            // row names them where the record says, as its base does.
            if let blocks = item.blocks, item.kind == .file, blocks.sameContent(as: row.blockList) { row.blockList = blocks }
            if !mtimeChangedHere && !localContent && row.contentState == .local && row.itemKind == .file {
                outcome.mtimes.append((row.inode, row.mtime))
            }
            outcome.invalidations.append(.inode(row.inode, data: false))
            if metadataDiffers { note(.modified, row.inode, detail: "metadata") }
        }
    }

    /// Whether a place changed here stays (the merge keeps it). A name removed here moved
    /// the item to a link's place: once that link is gone there too, the record's place
    /// stands (no one has a name for the item where it is).
    private func keepsLocalPlace(_ row: ItemRow, base: ItemSnapshot?) throws -> Bool {
        guard row.dirtyFlags.contains(.metadata) else { return false }
        let baseParent: Inode? = try base.flatMap { base in
            base.parent == .root ? Inode.root : try ItemRow.find(id: base.parent, db)?.inode
        }
        guard base == nil || row.parent != baseParent || row.itemName != base?.name else { return false }
        return try !(row.dirtyFlags.subtracting(.times) == [.metadata, .nameRemoved] && !holdsLinkPlace(row))
    }

    /// Another device moved the item: so does this one, unless that would put a folder
    /// inside itself (then it goes to the top, and that is a conflict to tell).
    private mutating func follow(move row: inout ItemRow, to parent: Inode, name: ByteString) throws {
        note(.moved, row.inode, from: try currentPath(row.inode))
        var target = parent
        if row.itemKind == .directory, try ItemRow.isInside(target, row.inode, db) {
            target = Inode.root
            row.markChanged(.metadata, now: now)
            let message = "moving \(name) would make a cycle; it was put at the top of the container"
            outcome.conflicts.append(message)
            note(.conflict, row.inode, detail: message)
        }
        try place(&row, parent: target, name: name)
        // Moved, maybe into a pinned folder.
        if row.itemKind == .file && row.contentState == .placeholder { outcome.placeholders.append(row.inode) }
    }

    private mutating func insert(_ item: ItemSnapshot, parent: Inode, seq: UInt64) throws {
        try makeRoom(parent: parent, name: item.name, keeping: item.id)
        var row = ItemRow(
            id: item.id, parent: parent, name: item.name, kind: item.kind, mode: item.mode,
            uid: UInt32(getuid()), gid: UInt32(getgid()), size: item.size, mtime: item.mtime, ctime: now,
            target: item.target
        )
        take(item, into: &row, content: true)
        row.contentState = item.kind == .file ? .placeholder : .local
        row.baseSeq = Int64(seq)
        try row.insert(db)
        try StoredXattrs.replace(row.inode, with: item.xattrs ?? [:], db)
        if item.kind == .file { outcome.placeholders.append(row.inode) }
        outcome.invalidations.append(.entry(parent: parent, name: item.name.bytes))
        try invalidateNamedItem(of: row)
        note(.created, row.inode)
    }

    /// Copies the committed fields into the row; content fields only when asked. The
    /// xattrs are rows of their own: the caller replaces them once the row has an inode.
    private func take(_ item: ItemSnapshot, into row: inout ItemRow, content: Bool) {
        row.itemKind = item.kind
        row.mode = Int64(item.mode)
        row.mtime = item.mtime
        row.symlinkTarget = item.target
        row.rdev = item.kind.isDevice ? item.rdev.map { Int64(bitPattern: $0) } ?? 0 : nil
        row.linkedItem = item.kind == .link ? item.of : nil
        row.ctime = now
        if content || item.kind != .file {
            row.size = item.size
            row.blockList = item.blocks ?? []
        }
    }

    /// Whether the committed tree still holds this item with the folder, name, mode and
    /// xattrs it has here (its delete here not pushed, nothing else changed).
    private func stillCommittedAsIs(_ row: ItemRow) throws -> Bool {
        guard let base = try BaseSnapshots.find(row.itemID, db) else { return false }
        let parent = base.parent == .root ? Inode.root : try ItemRow.find(id: base.parent, db)?.inode
        guard let parent else { return false }
        return try matchesMetadata(row, base, parent: parent)
    }

    static func differsOnlyInTime(_ item: ItemSnapshot, from base: ItemSnapshot) -> Bool {
        var same = item
        same.mtime = base.mtime
        return same == base
    }

    private func matchesMetadata(_ row: ItemRow, _ item: ItemSnapshot, parent: Inode) throws -> Bool {
        try row.parent == parent && row.itemName == item.name && UInt32(row.mode) == item.mode
            && row.symlinkTarget == item.target && StoredXattrs.all(of: row.inode, db) == (item.xattrs ?? [:])
    }

    /// The local version becomes a new item beside the committed one, keeping its inode
    /// (and so every open handle on it) and its cache file. Its place is merged as the
    /// item's would be: one moved here stays where this device put it; otherwise it goes
    /// where the record puts the item, named after it (not left in a folder the item left
    /// there, which that device may have deleted since).
    private mutating func splitConflict(_ row: inout ItemRow, remote: ItemSnapshot, base: ItemSnapshot?, parent: Inode, seq: UInt64) throws {
        let originalName = row.itemName
        let originalParent = row.parent ?? Inode.root
        let originalPath = try currentPath(row.inode)
        let movedHere = try keepsLocalPlace(row, base: base)
        let (copyParent, stem) = movedHere ? (originalParent, originalName) : (parent, remote.name)
        let copyName = try freeName(
            ItemName.conflictCopy(of: stem, device: device.name, date: Timestamp.conflictStamp(now)),
            parent: copyParent
        )
        // The item's other names stay with its id, which the committed version takes: the
        // kernel must look them up again to find its new inode.
        for link in try ItemRow.links(to: row.itemID, db) {
            outcome.invalidations.append(.entry(parent: link.parent ?? Inode.root, name: link.itemName.bytes))
        }
        row.itemID = .random()
        row.parent = copyParent
        row.itemName = copyName
        row.baseSeq = 0
        row.blockList = []
        row.markChanged([.metadata, .content], now: now)
        try row.update(db)
        outcome.invalidations.append(.entry(parent: originalParent, name: originalName.bytes))
        outcome.invalidations.append(.entry(parent: copyParent, name: copyName.bytes))
        outcome.invalidations.append(.inode(row.inode, data: false))
        let message = "\(originalName): edited here and on another device; this device's version is now \(copyName)"
            + (notMerged.map { " (not merged: \($0))" } ?? "")
        outcome.conflicts.append(message)
        try insert(remote, parent: parent, seq: seq)
        note(.conflict, row.inode, path: originalPath, detail: message)
    }

    // MARK: Delete

    mutating func delete(_ id: ItemID) throws {
        outcome.changedItems.append(id)
        try trash.note(deleting: id, db)
        // What the committed tree had inside it, found once: deleting the top of a deep tree
        // stays linear in its size.
        let committedInside = try BaseSnapshots.descendants(of: id, db)
        try BaseSnapshots.remove(id, db)
        guard let row = try ItemRow.find(id: id, db) else { return }
        if row.deleted {
            var row = row
            // Deleted on both sides: nothing left to push.
            row.dirtyFlags = []
            try row.update(db)
            return
        }
        // What is inside a changed item stays with it: a folder moved in here is not part of
        // what the other device deleted (its contents are not even in that device's folder).
        let subtree = try ItemRow.subtreeStoppingAtChanges(of: row.inode, db)
        let subtreeSet = Set(subtree)
        // Deepest first, so a folder is decided after everything in it.
        var survivors: Set<Inode> = []
        for ino in subtree.reversed() {
            // A link deleted with its item earlier in the loop is done; an ignored item was
            // never in the container, and its only copy is here.
            guard var item = try ItemRow.find(ino: ino, db), !item.deleted, !item.isIgnored else { continue }
            // A folder this device had deleted, brought back only for a change the deleting
            // device has now taken away with it: deleted on both sides, nothing to keep.
            let onlyBroughtBack = item.dirtyFlags.edited && outcome.resurrected[item.itemID] == item.changeGen
            let keep = try (item.dirtyFlags.edited && !onlyBroughtBack) || ItemRow.hasChildren(ino, db) || keptForItsNames(item)
            if keep, !item.dirtyFlags.edited, try ItemRow.holdsOnlyIgnored(ino, db) {
                // Kept only for the ignored items in it: it stays here, ignored from now on,
                // under an id never pushed (the record deletes the old one everywhere).
                if committedInside.contains(item.itemID) { try BaseSnapshots.remove(item.itemID, db) }
                item.itemID = .random()
                (item.baseSeq, item.dirtyFlags) = (0, [])
                item.ignoreMarks.insert(.attribute)
                try item.update(db)
                continue
            }
            if keep {
                // Edit wins over delete: the item stays and will be committed as new, if the
                // delete took it. One moved in here is still where others have it (its base):
                // pushes look up who holds a name there (`PushPlan.withDependencies`).
                survivors.insert(ino)
                item.markChanged(.metadata, now: now)
                if ino == row.inode || committedInside.contains(item.itemID) {
                    item.baseSeq = 0
                    try BaseSnapshots.remove(item.itemID, db)
                }
                try item.update(db)
                continue
            }
            // Here only because its own name was removed here (it took the place of a link this
            // record deletes with the folder): the others still have it where it is committed.
            // Its last name went here and there, and its delete is pushed, unless another link
            // outside the folder still names it: then the removal moves it on to that one.
            let nameRemovedInto = ino != row.inode && !committedInside.contains(item.itemID)
                && item.dirtyFlags.subtracting(.times) == [.metadata, .nameRemoved]
            if nameRemovedInto, try moveToLink(&item, outside: subtreeSet) { continue }
            let path = try currentPath(ino)
            item.deleted = true
            item.dirtyFlags = nameRemovedInto ? .metadata : []
            try item.update(db)
            // Gone from the committed tree with its folder, even if the record did not name
            // it (a committer that had not seen it there): no base of a deleted item.
            if committedInside.contains(item.itemID) { try BaseSnapshots.remove(item.itemID, db) }
            note(.deleted, ino, path: path)
            if item.contentState != .placeholder { outcome.droppedContent.append(ino) }
            outcome.invalidations.append(.entry(parent: item.parent ?? Inode.root, name: item.itemName.bytes))
            outcome.invalidations.append(.inode(ino, data: false))
            try invalidateNamedItem(of: item)
            if item.itemKind != .directory && !item.isLink { try deleteLinks(to: item) }
        }
        if !survivors.isEmpty {
            let message = "\(row.itemName): deleted on another device but changed here; the changed items were kept"
            outcome.conflicts.append(message)
            note(.conflict, row.inode, detail: message)
        }
    }

    // MARK: Names and places

    /// Moves the row to `parent/name`, renaming whatever else lives there first.
    private mutating func place(_ row: inout ItemRow, parent: Inode, name: ByteString) throws {
        if let oldParent = row.parent {
            outcome.invalidations.append(.entry(parent: oldParent, name: row.itemName.bytes))
        }
        if row.parent != parent || row.itemName != name || row.deleted {
            try makeRoom(parent: parent, name: name, keeping: row.itemID)
        }
        row.parent = parent
        row.itemName = name
        outcome.invalidations.append(.entry(parent: parent, name: name.bytes))
    }

    /// Two items cannot share a name: the one already here steps aside as `name (n)`.
    private mutating func makeRoom(parent: Inode, name: ByteString, keeping id: ItemID) throws {
        guard var other = try ItemRow.child(of: parent, named: name, db), other.itemID != id else { return }
        if comingLater[other.itemID] != nil && !other.dirtyFlags.edited {
            // The record itself moves or deletes it next: step aside quietly, as the
            // committing device did (NUL is in no real name, so this clashes with nothing).
            displaced[other.inode] = displaced[other.inode] ?? (parent, name)
            other.itemName = ByteString(Array("\0displaced \(other.inode)".utf8))
            try other.update(db)
            outcome.invalidations.append(.entry(parent: parent, name: name.bytes))
            return
        }
        let newName = try freeName(name, parent: parent)
        let oldPath = try currentPath(other.inode)
        other.itemName = newName
        // An ignored item (never in the container) steps aside here only, and stays ignored
        // under its new name whatever the rules say of it.
        if other.isIgnored { other.ignoreMarks.insert(.attribute) }
        // An item with a held change is placed by that change once applied: its side step is
        // local only (pushed, it would read as an edit and bring back a held delete).
        if try HeldChanges.find(other.itemID, db) == nil { other.markChanged(.metadata, now: now) }
        try other.update(db)
        outcome.invalidations.append(.entry(parent: parent, name: name.bytes))
        outcome.invalidations.append(.entry(parent: parent, name: newName.bytes))
        let message = other.isIgnored
            ? "\(name): an item from another device took this name; the ignored item here is now \(newName)"
            : "\(name): two items had this name; one is now \(newName)"
        outcome.conflicts.append(message)
        note(.moved, other.inode, from: oldPath)
        note(.conflict, other.inode, detail: message)
    }

    /// An item stepped aside that its own operation did not place (a record that is not
    /// what its committer meant): it gets a free name near its old one and is pushed.
    mutating func settleDisplaced() throws {
        for (ino, origin) in displaced.sorted(by: { $0.key < $1.key }) {
            guard var row = try ItemRow.find(ino: ino, db), !row.deleted, row.itemName.bytes.first == 0 else { continue }
            row.itemName = try freeName(origin.name, parent: row.parent ?? origin.parent)
            if try HeldChanges.find(row.itemID, db) == nil { row.markChanged(.metadata, now: now) }
            try row.update(db)
            outcome.invalidations.append(.entry(parent: row.parent ?? origin.parent, name: row.itemName.bytes))
        }
    }

    private func freeName(_ name: ByteString, parent: Inode) throws -> ByteString {
        try ItemRow.freeName(name, in: parent, db)
    }

    /// Brings back a folder deleted here (and its deleted ancestors), to be committed as new.
    private mutating func resurrect(_ folder: inout ItemRow) throws {
        // Deleted ancestors first, top down (iteratively: the chain comes from the store).
        var chain: [ItemRow] = []
        var next = folder.parent
        while let ino = next, chain.count < 10_000, let ancestor = try ItemRow.find(ino: ino, db), ancestor.deleted {
            chain.append(ancestor)
            next = ancestor.parent
        }
        // A folder above gone from this device's table too (deleted on both sides, purged):
        // the topmost comes back at its committed place, or at the top.
        if let ino = next, try ItemRow.find(ino: ino, db) == nil {
            if chain.isEmpty { try placeAsCommitted(&folder) } else { try placeAsCommitted(&chain[chain.count - 1]) }
        }
        for var ancestor in chain.reversed() { try undelete(&ancestor) }
        try undelete(&folder)
    }

    /// The row's place becomes the committed tree's (its live folder there, or the top, and
    /// its committed name), for an item whose folder here is gone.
    private func placeAsCommitted(_ row: inout ItemRow) throws {
        let base = try BaseSnapshots.find(row.itemID, db)
        row.parent = Inode.root
        if let base, base.parent != .root, let parent = try ItemRow.find(id: base.parent, db), !parent.deleted, parent.itemKind == .directory {
            row.parent = parent.inode
        }
        if let base { row.itemName = base.name }
    }

    private mutating func undelete(_ folder: inout ItemRow) throws {
        let parentIno = folder.parent ?? Inode.root
        let name = try freeName(folder.itemName, parent: parentIno)
        folder.itemName = name
        folder.deleted = false
        if try stillCommittedAsIs(folder), let base = try BaseSnapshots.find(folder.itemID, db) {
            // Deleted here only, and the others have it as it is here: the delete is undone
            // and there is nothing to push. Pushed, it would read elsewhere as an edit, and
            // keep the folder on a device that deletes it too (as the one that moved
            // something in may do next). Its time is theirs too: the deletes in it that
            // moved it here went as deletes, not with it.
            folder.mtime = base.mtime
            folder.dirtyFlags = []
            folder.changeGen += 1
            folder.ctime = now
            try folder.update(db)
        } else {
            folder.baseSeq = 0
            folder.markChanged(.metadata, now: now)
            try folder.update(db)
            outcome.resurrected[folder.itemID] = folder.changeGen
        }
        outcome.invalidations.append(.entry(parent: parentIno, name: name.bytes))
        let message = "\(name): deleted here but changed on another device; it was kept"
        outcome.conflicts.append(message)
        note(.conflict, folder.inode, detail: message)
    }
}
