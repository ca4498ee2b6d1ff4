import Foundation
import GRDB
import Inodes
import ItemModel

/// This device's state (`state.db`): items, the journal cursor and the device identity.
/// One `Sendable` facade owns the GRDB pool; synchronous reads run concurrently on
/// libfuse threads through `ReaderConnections`, writes are serialised by SQLite. WAL with
/// synchronous=NORMAL for ordinary changes, which a power cut may take back (the newest
/// ones, never a part of one); `syncToDisk` and `durableWrite` make them durable
/// (`DurabilityBarrier`).
public final class MetadataStore: Sendable {
    let pool: DatabasePool
    public let path: String
    private let readers: ReaderConnections
    private let barrier = DurabilityBarrier()

    public init(path: String) throws(MetadataError) {
        self.path = path
        readers = ReaderConnections(path: path)
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        configuration.busyMode = .timeout(30)
        // Private to its owner: SQLite gives the -wal and -shm files the database's mode.
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            fchmod(fd, 0o600)
            close(fd)
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(pool)
        } catch {
            throw MetadataError(code: .open, message: "cannot open the state database \(path)", cause: error)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "item") { t in
                t.autoIncrementedPrimaryKey("ino")
                t.column("id", .text).notNull().unique()
                t.column("parent", .integer)
                t.column("name", .blob).notNull()
                t.column("kind", .text).notNull()
                t.column("mode", .integer).notNull()
                t.column("uid", .integer).notNull()
                t.column("gid", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("mtime", .integer).notNull()
                t.column("ctime", .integer).notNull()
                t.column("atime", .integer).notNull()
                t.column("target", .blob)
                t.column("xattrs", .blob)
                t.column("blocks", .blob)
                t.column("content", .integer).notNull()
                t.column("baseSeq", .integer).notNull()
                t.column("dirty", .integer).notNull()
                t.column("deleted", .boolean).notNull()
                t.column("changeGen", .integer).notNull()
            }
            // One live name per folder, enforced by SQLite itself.
            try db.execute(sql: "CREATE UNIQUE INDEX item_name ON item(parent, name) WHERE deleted = 0")
            try db.execute(sql: "CREATE INDEX item_children ON item(parent, ino)")
            try db.execute(sql: "CREATE INDEX item_dirty ON item(dirty) WHERE dirty != 0")
            // The committed state of every item as of `lastSeq` (the "synced tree"): the
            // base that local changes are compared with, and what checkpoints are made of.
            try db.create(table: "base") { t in
                t.primaryKey("id", .text)
                t.column("seq", .integer).notNull()
                t.column("snapshot", .blob).notNull()
            }
            try db.create(table: "setting") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
            // The root, in plain SQL: the row type follows the newest schema, this migration the v1 one.
            let now = Int64(Date().timeIntervalSince1970 * 1e9)
            try db.execute(sql: """
                INSERT INTO item (ino, id, parent, name, kind, mode, uid, gid, size, mtime, ctime, atime, content, baseSeq, dirty, deleted, changeGen)
                VALUES (1, ?, NULL, x'', 'directory', 493, ?, ?, 0, ?, ?, ?, 1, 0, 0, 0, 0)
                """, arguments: [ItemID.root.rawValue, Int64(getuid()), Int64(getgid()), now, now, now])
        }
        migrator.registerMigration("v2: pin states") { db in
            // NULL: inherit from the folder above; 0: never kept local by force; 1: pinned.
            try db.alter(table: "item") { t in t.add(column: "pinned", .integer) }
        }
        migrator.registerMigration("v3: file versions") { db in
            // Every committed content of a file seen here, for `ubiqfs versions` and `restore`.
            try db.create(table: "version") { t in
                t.column("id", .text).notNull()
                t.column("seq", .integer).notNull()
                t.column("device", .text).notNull()
                t.column("time", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("mtime", .integer).notNull()
                t.column("blocks", .blob).notNull()
                t.primaryKey(["id", "seq"])
            }
        }
        migrator.registerMigration("v4: special files") { db in
            // FIFOs, sockets and device nodes; devices keep their number here.
            try db.alter(table: "item") { t in t.add(column: "rdev", .integer) }
        }
        migrator.registerMigration("v5: one row per xattr") { db in
            // Each attribute its own row (StoredXattrs), moved out of the JSON column, which
            // stays NULL from now on.
            try db.execute(sql: """
                CREATE TABLE xattr (
                    ino INTEGER NOT NULL REFERENCES item(ino) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    value BLOB NOT NULL,
                    PRIMARY KEY (ino, name)
                ) WITHOUT ROWID
                """)
            let rows = try Row.fetchAll(db, sql: "SELECT ino, xattrs FROM item WHERE xattrs IS NOT NULL")
            for row in rows {
                let json: Data = row["xattrs"]
                let xattrs = try JSONDecoder().decode([String: Data].self, from: json)
                for (name, value) in xattrs { try StoredXattrs.set(row["ino"], name: name, value: value, db) }
            }
            try db.execute(sql: "UPDATE item SET xattrs = NULL")
        }
        migrator.registerMigration("v6: subfolder index") { db in
            // A folder's link count (2 + subfolders) is asked for after every change in it;
            // without this it visited every child, so a folder of N items cost O(N) per create.
            try db.execute(sql: "CREATE INDEX item_subfolders ON item(parent) WHERE deleted = 0 AND kind = 'directory'")
        }
        migrator.registerMigration("v7: committed places") { db in
            // Where each committed item is (its folder's id and its name), beside the snapshot:
            // a push that gives an item a name must carry the change of the item that held it,
            // and a folder's delete the changes of what was in it (`BaseSnapshots.holders`).
            try db.alter(table: "base") { t in
                t.add(column: "parent", .text)
                t.add(column: "name", .blob)
            }
            let decoder = JSONDecoder()
            let rows = try Row.fetchCursor(db, sql: "SELECT id, snapshot FROM base")
            let update = try db.makeStatement(sql: "UPDATE base SET parent = ?, name = ? WHERE id = ?")
            while let row = try rows.next() {
                let snapshot = try decoder.decode(ItemSnapshot.self, from: row["snapshot"] as Data)
                try update.execute(arguments: [snapshot.parent.rawValue, Data(snapshot.name.bytes), row["id"] as String])
            }
            try db.execute(sql: "CREATE INDEX base_place ON base(parent, name)")
        }
        migrator.registerMigration("v8: held changes") { db in
            // Other devices' changes to items open for writing here, waiting for the writer
            // to close (`HeldChanges`); the rest of the journal is applied meanwhile.
            try db.create(table: "held") { t in
                t.primaryKey("id", .text)
                t.column("seq", .integer).notNull()
                t.column("operation", .blob).notNull()
                t.column("device", .text).notNull()
                t.column("time", .integer).notNull()
                t.column("waitingFor", .text).notNull()
            }
        }
        migrator.registerMigration("v9: inode generation") { db in
            // Inode numbers are never reused within one database (AUTOINCREMENT), but a new
            // database (`ubiqfs reset`) numbers items again: file handles taken before must
            // go stale rather than open whatever item has their number now.
            try Self.setSetting(Self.inodeGenerationKey, String(UInt32.random(in: 1...UInt32.max)), db)
        }
        migrator.registerMigration("v10: fetched blocks") { db in
            try FetchedBlocks.createTable(db)
        }
        migrator.registerMigration("v11: trash") { db in
            try TrashEntries.createTables(db)
        }
        migrator.registerMigration("v12: pin setters") { db in
            // Who set an explicit pin state, when another user of a shared mount did
            // (`PinState`); NULL: the mount's owner or root.
            try db.alter(table: "item") { t in
                t.add(column: "pinned_uid", .integer)
                t.add(column: "pinned_gid", .integer)
            }
        }
        migrator.registerMigration("v13: the root is never pending") { db in
            // Its own changes stay this device's (`ItemRow.markChanged`); before, they were
            // marked and never pushed, pending for ever.
            try db.execute(sql: "UPDATE item SET dirty = 0 WHERE ino = ?", arguments: [Inode.root])
        }
        migrator.registerMigration("v14: hard links") { db in
            // A link row names another item by id (`ItemRow+Links`); the index finds an
            // item's names, whose count is its st_nlink.
            try db.alter(table: "item") { t in t.add(column: "linkTo", .text) }
            try db.execute(sql: "CREATE INDEX item_links ON item(linkTo) WHERE linkTo IS NOT NULL AND deleted = 0")
        }
        migrator.registerMigration("v15: ignored items") { db in
            // Items that stay on this device (`IgnoreMarks`); the index counts them for `status`.
            try db.alter(table: "item") { t in t.add(column: "ignored", .integer).notNull().defaults(to: 0) }
            try db.execute(sql: "CREATE INDEX item_ignored ON item(ignored) WHERE ignored != 0 AND deleted = 0")
        }
        migrator.registerMigration("v16: thumbnails") { db in
            // Pictures made here of committed content, until a record carries them, and
            // contents no thumbnailer could picture (`MadeThumbnails`); entries written into
            // the desktop's cache (`InstalledThumbnails`).
            try db.execute(sql: """
                CREATE TABLE thumbnail_made(id TEXT NOT NULL, size INTEGER NOT NULL, content TEXT NOT NULL, png BLOB NOT NULL, PRIMARY KEY(id, size));
                CREATE TABLE thumbnail_installed(id TEXT PRIMARY KEY NOT NULL, uri TEXT NOT NULL, mtime INTEGER NOT NULL, size INTEGER NOT NULL, pictures TEXT NOT NULL);
                CREATE TABLE thumbnail_failed(id TEXT PRIMARY KEY NOT NULL, content TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("v17: merged versions") { db in
            // A version that merged another device's (`mergedWith`), and the edits of this
            // or another device it took in, each kept as a version `seq.input` (`FileVersions`).
            try db.execute(sql: """
                ALTER TABLE version ADD COLUMN mergedWith INTEGER;
                ALTER TABLE version ADD COLUMN mergeKind TEXT;
                CREATE TABLE version_input(
                    id TEXT NOT NULL, seq INTEGER NOT NULL, input INTEGER NOT NULL, device TEXT NOT NULL, time INTEGER NOT NULL,
                    size INTEGER NOT NULL, mtime INTEGER NOT NULL, blocks BLOB NOT NULL, PRIMARY KEY(id, seq, input));
                """)
        }
        migrator.registerMigration("v18: pending merges") { db in
            // Merges made here until a record carries them (`PendingMerges`).
            try db.execute(sql: "CREATE TABLE merge_pending(id TEXT PRIMARY KEY NOT NULL, note BLOB NOT NULL, merged TEXT NOT NULL)")
        }
        migrator.registerMigration("v19: held for a merge") { db in
            // v18 marked a change held for a merge by a NUL before the path, which a text
            // column does not keep: a restart took it for a writer's and made the copy.
            try db.execute(sql: """
                ALTER TABLE held ADD COLUMN merge INTEGER NOT NULL DEFAULT 0;
                UPDATE held SET merge = 1, waitingFor = substr(waitingFor, 2) WHERE substr(waitingFor, 1, 1) = char(0);
                """)
        }
        migrator.registerMigration("v20: held for a merge, as v18 stored it") { db in
            // The NUL cut the text as it was bound (GRDB binds text up to a NUL): v18 stored
            // an empty `waitingFor`, which v19's conversion did not match. A writer's hold
            // always names a path, so an empty one is a merge's (its path is lost: status
            // shows none until the merge is made).
            try db.execute(sql: "UPDATE held SET merge = 1 WHERE waitingFor = '' AND merge = 0")
        }
        migrator.registerMigration("v21: chunk index") { db in
            // Where committed large files' blocks are, by name (`ChunkIndex`).
            try ChunkIndex.createTable(db)
        }
        migrator.registerMigration("v22: the journal's blocks of each file") { db in
            // What format-5 splices are edits of (`JournalBlocks`).
            try JournalBlocks.createTable(db)
        }
        migrator.registerMigration("v23: when each item's changes started to wait") { db in
            try PendingSince.create(db)
        }
        return migrator
    }

    /// A read whose statements all see one snapshot.
    public func read<T>(_ body: (Database) throws -> T) throws(MetadataError) -> T {
        do { return try readers.isolated(body) } catch { throw Self.wrap(error) }
    }

    /// A read with no snapshot across statements: each statement sees a consistent state
    /// of its own. For one statement, or where the caller's leases keep what it reads from
    /// changing; saves a BEGIN and a COMMIT on the hottest reads (lookup, getattr).
    public func readUnisolated<T>(_ body: (Database) throws -> T) throws(MetadataError) -> T {
        do { return try readers.unisolated(body) } catch { throw Self.wrap(error) }
    }

    public func write<T>(_ body: (Database) throws -> T) throws(MetadataError) -> T {
        do { return try pool.write(body) } catch { throw Self.wrap(error) }
    }

    /// A write that frees space (a delete): on a full disk it checkpoints the log, so the
    /// retry can start it over in the space it has, then asks `makeRoom` for space and
    /// retries while that finds some. All of it under the writer lock, so no other write
    /// of this database takes the room first.
    public func write<T>(makingRoom makeRoom: () -> Bool, _ body: (Database) throws -> T) throws(MetadataError) -> T {
        do {
            return try pool.writeWithoutTransaction { db in
                try Self.retryingWhenFull(db, makeRoom) {
                    var result: T?
                    try db.inTransaction {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
            }
        } catch {
            throw Self.wrap(error)
        }
    }

    /// Runs `attempt` (a whole transaction) again after a checkpoint, then while
    /// `makeRoom` finds space, as long as the disk is full.
    private static func retryingWhenFull<T>(_ db: Database, _ makeRoom: () -> Bool, _ attempt: () throws -> T) throws -> T {
        var checkpointed = false
        while true {
            do {
                return try attempt()
            } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
                if !checkpointed {
                    checkpointed = true
                    if (try? db.checkpoint(.passive)) != nil { continue }
                }
                guard makeRoom() else { throw error }
            }
        }
    }

    /// For actors: the same, without blocking a cooperative thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MetadataError) -> T {
        do { return try await pool.read(body) } catch { throw Self.wrap(error) }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(MetadataError) -> T {
        do { return try await pool.write(body) } catch { throw Self.wrap(error) }
    }

    /// A transaction that is on disk when this returns, with every one before it.
    public func durableWrite<T>(_ body: (Database) throws -> T) throws(MetadataError) -> T {
        let result = try write(body)
        try syncToDisk()
        return result
    }

    /// Every transaction committed before this call is on disk when it returns (fsync,
    /// fsyncdir, and what must be durable before a file's bytes change). Concurrent callers
    /// share one disk sync.
    /// On a full disk the sync's log page comes as a freeing write's does (`makeRoom`).
    public func syncToDisk(makingRoom makeRoom: () -> Bool = { false }) throws(MetadataError) {
        let needed = barrier.needed()
        do {
            try pool.writeWithoutTransaction { db in
                try Self.retryingWhenFull(db, makeRoom) { try barrier.commitUnlessCovered(needed, db) }
            }
        } catch {
            throw Self.wrap(error)
        }
    }

    /// A mark of every transaction committed so far: `isDurable(mark)` once a sync
    /// covers them (content that may go only after its delete is on disk waits for it).
    public func durabilityMark() -> UInt64 { barrier.needed() }

    public func isDurable(_ mark: UInt64) -> Bool { barrier.finishedThrough() >= mark }

    /// The same for actors, without blocking a cooperative thread.
    public func syncToDisk(makingRoom makeRoom: @escaping @Sendable () -> Bool = { false }) async throws(MetadataError) {
        let (needed, barrier) = (barrier.needed(), barrier)
        do {
            try await pool.writeWithoutTransaction { db in
                try Self.retryingWhenFull(db, makeRoom) { try barrier.commitUnlessCovered(needed, db) }
            }
        } catch {
            throw Self.wrap(error)
        }
    }

    // MARK: Settings

    static let inodeGenerationKey = "inodeGeneration"

    /// The generation of every inode of this database but the root's (which the kernel
    /// fixes at 0): what file handles carry to tell this database's items from another's.
    public func inodeGeneration() throws(MetadataError) -> UInt64 {
        guard let value = try setting(Self.inodeGenerationKey), let generation = UInt64(value) else {
            throw MetadataError(code: .corrupt, message: "the state database has no inode generation")
        }
        return generation
    }

    public func setting(_ key: String) throws(MetadataError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key]) }
    }

    public func setSetting(_ key: String, _ value: String) throws(MetadataError) {
        try write { db in try Self.setSetting(key, value, db) }
    }

    public static func setSetting(_ key: String, _ value: String, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO setting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [key, value])
    }

    public static func setting(_ key: String, _ db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key])
    }

    static func wrap(_ error: any Error) -> MetadataError {
        if let error = error as? MetadataError { return error }
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_FULL: return MetadataError(code: .diskFull, message: "the state disk is full", cause: error)
            case .SQLITE_IOERR: return MetadataError(code: .io, message: "the state disk reported an I/O error", cause: error)
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: return MetadataError(code: .corrupt, message: "the state database is damaged", cause: error)
            case .SQLITE_CONSTRAINT: return MetadataError(code: .constraint, message: "state database constraint", cause: error)
            default: break
            }
        }
        return MetadataError(code: .query, message: "state database error", cause: error)
    }
}
