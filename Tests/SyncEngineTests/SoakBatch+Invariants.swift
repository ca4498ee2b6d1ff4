import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import GRDB
import Glibc
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Synchronization
import Testing

/// What must hold after every round: convergence, no lost write, no resurrected delete,
/// the exact conflict copies, a quiet second sync, integrity and cache accounting.
extension SoakBatch {
    // MARK: Invariants

    /// Items in `held` (changes held for a writer, `heldItems`) are left out: they converge
    /// once their writer closes. So are the names of links in `held` (a link to a file that
    /// is not held may wait, `HeldScope`), also from their item's count of names.
    func checkConvergence(
        reference: Int, written: [(content: String, origin: String, id: String)], idsBefore: Set<String>, expectedCopies: ClosedRange<Int>,
        held: Set<String>, _ stats: inout SoakStats
    ) async throws {
        let referenceDevice = devices[reference]
        let expected = try snapshot(referenceDevice, leavingOut: held)
        // The reference reads every file (downloading what it must); others compare the
        // content they hold locally, and the committed blocks of the rest.
        var contents: [String: String] = [:]
        let info = referenceDevice.engine.info
        for (path, node) in expected where node.kind == .file {
            let content = try await referenceDevice.read(path)
            contents[path] = content
            stats.checked("content matches blocks")
            if try !Self.blocks(Array(content.utf8), info: info, like: node.blocks).sameContent(as: node.blocks) {
                fail("\(referenceDevice.name):\(path) reads \(content.debugDescription), which is not its committed blocks \(node)")
            }
        }
        for index in online where index != reference {
            let device = devices[index]
            let tree = try snapshot(device, leavingOut: held)
            stats.checked("convergence")
            if tree != expected {
                let paths = Set(tree.keys).union(expected.keys).sorted().filter { tree[$0] != expected[$0] }
                fail("trees differ between \(referenceDevice.name) and \(device.name):\n" + paths.map {
                    "  \($0): \(referenceDevice.name)=\(expected[$0]?.description ?? "-")\n  \(String(repeating: " ", count: $0.count + 2))\(device.name)=\(tree[$0]?.description ?? "-")"
                }.joined(separator: "\n"))
            }
            let localFiles = try localFileInodes(device)
            for entry in try entries(device) where entry.kind == .file && localFiles.contains(entry.ino) && !held.contains(entry.id) && !held.contains(entry.nameID) {
                let local = String(decoding: FileManager.default.contents(atPath: device.cache.path(for: entry.ino)) ?? Data(), as: UTF8.self)
                stats.checked("local content")
                if let content = contents[entry.path], local != content {
                    fail("\(device.name):\(entry.path) holds \(local.debugDescription) but \(referenceDevice.name) reads \(content.debugDescription)")
                }
            }
        }
        // No lost writes.
        let present = Set(contents.values)
        for (content, origin, id) in written where !held.contains(id) {
            stats.checked("no lost write")
            if !present.contains(content) {
                fail("lost write: \(origin) had \(content.debugDescription)\ntree of \(referenceDevice.name):\n" + contents.keys.sorted().map { "  \($0): \(contents[$0]!.debugDescription)" }.joined(separator: "\n"))
            }
        }
        // Conflict copies: the items this sync created, on any device (one made inside a
        // folder whose delete is held stays on its device until the writer closes).
        var created: [String: (path: String, node: Node)] = [:]
        for index in online {
            for (path, node) in try snapshot(devices[index]) where !idsBefore.contains(node.id) { created[node.id] = (path, node) }
        }
        for (path, node) in created.values where node.kind != .file || !path.contains(Self.conflictMarker) {
            fail("this sync created \(path) (\(node)), which is not a conflict copy")
        }
        stats.checked("conflict copies")
        stats.conflictCopies += created.count
        if !expectedCopies.contains(created.count) {
            fail("expected \(expectedCopies) conflict copies from this sync, found \(created.count): \(created.values.map(\.path).sorted())")
        }
    }

    /// No resurrected deletes. A committed item that a device deleted must be gone once all
    /// devices synced, unless another device touched it since the last round in which
    /// all were online: changed it, moved it, or changed or put something inside it. That
    /// window is wider than "concurrently" (a change the deleting device had already seen
    /// also counts), so this is a lower bound of what must stay deleted: the model cannot
    /// tell apart, without replaying the journal, which of two changes in the window a
    /// device saw first.
    /// What a device holds (`heldItems`) is left out, and its changes to it stay in the
    /// window: they are pushed only once the held change lands.
    func checkDeletes(reference: Int, held: [Int: Set<String>], _ stats: inout SoakStats) async throws {
        let present = try liveIDs(devices[reference]).subtracting(held.values.joined())
        for (device, id, inside, _, what) in windowDeleted {
            // Touched elsewhere: the item, or what it held here when it was deleted (a folder
            // moved into it here, then changed on another device, brings it back), or held
            // earlier in the window and deleted first (a file edited elsewhere comes back, and
            // its folder with it).
            let emptiedFirst = windowDeleted.filter { $0.device == device && $0.above.contains(id) }.flatMap { [$0.id] + $0.inside }
            let held = inside + emptiedFirst
            let touched = windowTouched.indices.contains { other in
                other != device && (windowTouched[other].contains(id) || held.contains { windowTouched[other].contains($0) })
            }
            guard !touched else { continue }
            stats.checked("no resurrected delete")
            if present.contains(id) {
                let path = try await devices[reference].metadata.read { db in try ItemRow.find(id: ItemID(id), db).map { try ItemRow.path(of: $0.inode, db) } }
                let history = await storeHistory(of: [id])
                fail("resurrected delete: \(what), no other device touched it, yet it is back as \(path ?? "?") (id \(id))\n"
                    + "journal and checkpoints about it:\n" + history)
            }
        }
        windowDeleted = []
        // A held item, and the folders above it there that this device touched: a held-back
        // item (a link to a held file, say) is pushed into its folder only once the held
        // change lands, and brings that folder back on a device that deleted it meanwhile,
        // even one that saw it empty (docs/CONTAINER-FORMAT.md, "Remote upsert into a folder
        // deleted locally").
        var keep: [Set<String>] = []
        for index in windowTouched.indices {
            let ids = held[index] ?? []
            keep.append(ids.isEmpty ? [] : ids.union(try foldersAbove(ids, on: devices[index])))
        }
        windowTouched = windowTouched.indices.map { windowTouched[$0].intersection(keep[$0]) }
    }

    /// A second sync of the online devices: nothing to transfer, nothing to commit.
    /// A device `holding` changes for a writer may keep local changes back (`HeldScope`).
    func checkQuiet(journal: Int, holding: Set<Int>, _ stats: inout SoakStats) async throws {
        // Prefetches a sync started (pinned files) run in the background: done first.
        for device in devices {
            for _ in 0..<2000 where !(await device.engine.downloads.isIdle) { try await Task.sleep(for: .milliseconds(10)) }
        }
        for soakStore in stores { _ = soakStore.takeCounters() }
        for index in rng.shuffled(online) { try await devices[index].sync() }
        let journalAfter = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        stats.checked("quiet sync")
        if journalAfter != journal {
            fail("a sync after quiescence committed \(journalAfter - journal) more journal records")
        }
        for index in online {
            let device = devices[index]
            let counters = stores[index].takeCounters()
            stats.checked("quiet sync")
            // One read of the next journal key; with an empty journal (lastSeq 0) also the
            // listing of checkpoints/ that a new device makes (docs/ARCHITECTURE.md, "Pull").
            let allowed = journal == 0 ? 2 : 1
            if counters.writes != 0 || counters.blockReads != 0 || counters.total > allowed {
                fail("\(device.name): a sync after quiescence made store calls beyond one journal read: \(counters)")
            }
            let status = await device.engine.status()
            if status.pendingItems != 0 && !holding.contains(index) { fail("\(device.name) still has \(status.pendingItems) pending items") }
            if status.lastSeq != UInt64(journal) { fail("\(device.name) is at journal \(status.lastSeq), the journal has \(journal)") }
        }
    }

    /// SQLite's own check, and the shape of the tables.
    func checkMetadata(_ device: TestDevice, quiescent: Bool, _ stats: inout SoakStats) throws {
        let (integrity, rows, bases, xattrs) = try device.metadata.read { db in
            let rows = try ItemRow.fetchAll(db)
            let xattrs = try Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, try StoredXattrs.all(of: $0.inode, db)) })
            return (try String.fetchAll(db, sql: "PRAGMA integrity_check"), rows, try BaseSnapshots.all(db), xattrs)
        }
        stats.checked("sqlite integrity")
        if integrity != ["ok"] { fail("\(device.name): PRAGMA integrity_check says \(integrity)") }
        let byIno = Dictionary(uniqueKeysWithValues: rows.map { ($0.inode, $0) })
        let live = rows.filter { !$0.deleted && $0.inode != Inode.root }
        stats.checked("metadata shape")
        let liveByID = Dictionary(live.map { ($0.itemID, $0) }, uniquingKeysWith: { first, _ in first })
        for row in live {
            guard let parentIno = row.parent, let parent = byIno[parentIno], !parent.deleted, parent.itemKind == .directory else {
                fail("\(device.name): live item \(row.itemName) (ino \(row.inode)) has no live folder (parent \(row.parent.map(String.init) ?? "nil"))")
                continue
            }
            // A live link names a live item that is neither a folder nor a link.
            if row.isLink, row.linkedItem.flatMap({ liveByID[$0] }).map({ $0.itemKind == .directory || $0.isLink }) != false {
                fail("\(device.name): link \(row.itemName) (ino \(row.inode)) names no live file-like item (\(row.linkedItem?.rawValue ?? "nil"))")
            }
        }
        guard quiescent else { return }
        stats.checked("committed state")
        let dirty = rows.filter { !$0.dirtyFlags.isEmpty }
        if !dirty.isEmpty {
            fail("\(device.name): rows still dirty after sync: \(dirty.map { "\($0.itemName) dirty=\($0.dirtyFlags.rawValue) deleted=\($0.deleted)" })")
        }
        let basesByID = Dictionary(bases.map { ($0.id.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        let liveIDs = Set(live.map(\.itemID.rawValue))
        let stale = bases.filter { !liveIDs.contains($0.id.rawValue) }
        if !stale.isEmpty {
            fail("\(device.name): base snapshots of items not in the tree: \(stale.map { "\($0.name) \($0.id.rawValue.prefix(8))" })")
        }
        for row in live {
            guard let base = basesByID[row.itemID.rawValue] else {
                fail("\(device.name): \(row.itemName) has no committed snapshot")
                continue
            }
            let parentID = row.parent == Inode.root ? ItemID.root.rawValue : byIno[row.parent ?? 0]?.itemID.rawValue
            let samePlace: Bool = base.name == row.itemName && base.parent.rawValue == parentID && base.kind == row.itemKind
            let sameMetadata: Bool = base.mode == UInt32(row.mode) && base.target == row.symlinkTarget && (base.xattrs ?? [:]) == xattrs[row.inode]
                && base.of == row.linkedItem
            let sameContent: Bool = row.itemKind != .file || ((base.blocks ?? []) == row.blockList && base.size == row.size)
            if !(samePlace && sameMetadata && sameContent) {
                fail("\(device.name): \(row.itemName) differs from its committed snapshot: row mode \(String(row.mode, radix: 8)) size \(row.size) vs \(base)")
            }
        }
    }

    /// The cache holds exactly the content of the local files, and says so.
    /// `open`: a file a long writer holds open, whose content stays for its descriptor even
    /// once deleted.
    func checkCache(_ device: TestDevice, open: Inode? = nil, _ stats: inout SoakStats) async throws {
        let directory = device.cache.directory
        // The engine removes deleted content in the background (`removalDelay` after its
        // delete): a listing and the report taken on either side of one removal differ,
        // so they must agree on one of a few tries.
        var (sizes, allocated) = try scanCache(device)
        var reported = device.core.cacheBytes()
        for _ in 0..<5 where reported != allocated {
            try await Task.sleep(for: .milliseconds(20))
            (sizes, allocated) = try scanCache(device)
            reported = device.core.cacheBytes()
        }
        stats.checked("cache accounting")
        if reported != allocated { fail("\(device.name): cacheBytes() says \(reported), the cache files take \(allocated)") }
        let temporaries = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")) ?? []
        if !temporaries.isEmpty { fail("\(device.name): cache/tmp holds \(temporaries)") }
        let rows = try await device.metadata.read { db in try ItemRow.fetchAll(db) }
        // Local and partial files have a cache file (a partial one is a sparse file of the item's size).
        let local = Dictionary(uniqueKeysWithValues: rows.filter { !$0.deleted && $0.itemKind == .file && $0.contentState.hasCacheFile }.map { ($0.inode, $0) })
        for (ino, row) in local {
            if device.cache.awaitsRemoval(ino) { fail("\(device.name): \(row.itemName) is \(row.contentState) but its content awaits removal") }
            guard let size = sizes[ino] else {
                fail("\(device.name): \(row.itemName) is \(row.contentState) but has no cache file")
                continue
            }
            // A dirty row's size is not updated by writes (only an offline device has some).
            if row.dirtyFlags.isEmpty && size != row.size { fail("\(device.name): \(row.itemName) has size \(row.size), its cache file \(size)") }
        }
        // A deleted file's content stays until its delete is on disk; the engine may remove
        // it between the listing above and this check (then it is gone, not an orphan).
        for ino in sizes.keys where local[ino] == nil && ino != open && !device.cache.awaitsRemoval(ino) && device.cache.status(ino) != nil {
            let row = rows.first { $0.inode == ino }
            fail("\(device.name): orphan cache file cache/\(ino) (\(row.map { "\($0.itemName) deleted=\($0.deleted) content=\($0.contentState)" } ?? "no row"))")
        }
    }

    /// Each cache file's size, and the bytes all of them take on disk (`tmp/` holds downloads
    /// in flight, `reserve` the space kept for deletes on a full disk).
    private func scanCache(_ device: TestDevice) throws -> (sizes: [Inode: Int64], allocated: Int64) {
        let directory = device.cache.directory
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != "tmp" && $0 != "reserve" }
        var sizes: [Inode: Int64] = [:]
        var allocated: Int64 = 0
        for name in names {
            guard let ino = UInt64(name).map(Inode.init(rawValue:)) else {
                fail("\(device.name): stray file cache/\(name)")
                continue
            }
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { continue }
            sizes[ino] = Int64(info.st_size)
            allocated += Int64(info.st_blocks) * 512
        }
        return (sizes, allocated)
    }

    /// A new device joins from the newest checkpoint and the journal after it.
    func lateJoiner(_ stats: inout SoakStats) async throws {
        let journal = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
        let late = try await TestDevice(store: store, name: "late", checkpointInterval: 16, configuration: Self.configuration(seed: seed))
        do {
            let before = failures.count
            try await checkLateJoiner(late, &stats)
            let journalAfter = try await store.listAll(prefix: ContainerLayout.journalPrefix).count
            stats.checked("late device commits nothing")
            if journalAfter != journal { fail("the device joining after the last round committed \(journalAfter - journal) journal records") }
            if failures.count > before {
                let ids = try Set(snapshot(late).values.map(\.id)).symmetricDifference(Set(snapshot(devices[0]).values.map(\.id)))
                failures.append("journal and checkpoints about the items that differ:\n" + (await storeHistory(of: ids)))
            }
        } catch {
            await late.shutdown()
            throw error
        }
        await late.shutdown()
        if failures.isEmpty { try? FileManager.default.removeItem(atPath: late.stateDir) }
    }

    func checkLateJoiner(_ late: TestDevice, _ stats: inout SoakStats) async throws {
        let reference = devices[0]
        let expected = try snapshot(reference)
        let tree = try snapshot(late)
        stats.checked("late device converges")
        if tree != expected {
            let paths = Set(tree.keys).union(expected.keys).sorted().filter { tree[$0] != expected[$0] }
            fail("a device joining after the last round differs from \(reference.name):\n" + paths.map {
                "  \($0): \(reference.name)=\(expected[$0]?.description ?? "-") late=\(tree[$0]?.description ?? "-")"
            }.joined(separator: "\n"))
        }
        try checkMetadata(late, quiescent: true, &stats)
        try await checkCache(late, &stats)
    }

    /// What the store says about some items: checkpoints that hold them, journal operations
    /// on them (on every item with `UBIQFS_SOAK_DUMP=1`).
    func storeHistory(of ids: Set<String>) async -> String {
        var lines: [String] = []
        for key in (try? await store.listAll(prefix: ContainerLayout.checkpointPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let checkpoint = try? RecordCodec.decode(Checkpoint.self, from: bytes) else { continue }
            let held = checkpoint.items.filter { ids.contains($0.id.rawValue) }.map { "\($0.name) \($0.id.rawValue.prefix(8))" }
            lines.append("  \(key): \(checkpoint.items.count) items, of these: \(held)")
        }
        for key in (try? await store.listAll(prefix: ContainerLayout.journalPrefix)) ?? [] {
            guard let bytes = try? await store.get(key), let record = try? RecordCodec.decode(JournalRecord.self, from: bytes) else { continue }
            let everything = ProcessInfo.processInfo.environment["UBIQFS_SOAK_DUMP"] != nil
            for operation in record.ops where everything || ids.contains(operation.itemID.rawValue) {
                switch operation {
                case .upsert(let item):
                    lines.append("  \(key) by \(record.deviceName): upsert \(item.name) \(item.id.rawValue.prefix(8)) parent \(item.parent.rawValue.prefix(8)) blocks \((item.blocks ?? []).map { $0.hash.prefix(8) })")
                case .delete(let id):
                    lines.append("  \(key) by \(record.deviceName): delete \(id.rawValue.prefix(8))")
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}
