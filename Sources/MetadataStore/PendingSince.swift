import GRDB
import Inodes

/// When each item's local changes started to wait for a commit (`item.dirtySince`, unix
/// seconds, v23): set by a trigger when `dirty` goes from none to some, cleared when it
/// goes back, so every way a row is written (whole-row updates, the narrow ones of the
/// write path) keeps it without knowing. The age of the oldest is the metric an
/// administrator alerts on ("this mount is behind").
public enum PendingSince {
    static func create(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE item ADD COLUMN dirtySince INTEGER;
            UPDATE item SET dirtySince = CAST(strftime('%s', 'now') AS INTEGER) WHERE dirty != 0;
            CREATE TRIGGER item_dirty_since_insert AFTER INSERT ON item WHEN NEW.dirty != 0 BEGIN
                UPDATE item SET dirtySince = CAST(strftime('%s', 'now') AS INTEGER) WHERE ino = NEW.ino;
            END;
            CREATE TRIGGER item_dirty_since_update AFTER UPDATE OF dirty ON item
                WHEN (NEW.dirty != 0) != (OLD.dirty != 0) BEGIN
                UPDATE item SET dirtySince = CASE WHEN NEW.dirty != 0 THEN CAST(strftime('%s', 'now') AS INTEGER) END
                    WHERE ino = NEW.ino;
            END;
            """)
    }

    /// A commit took the item's changes up to `timestamp` (nanoseconds since 1970) and more
    /// came since: they have waited since then at most.
    public static func restart(_ ino: Inode, at timestamp: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE item SET dirtySince = max(coalesce(dirtySince, 0), ?) WHERE ino = ? AND dirty != 0",
                       arguments: [timestamp / 1_000_000_000, ino])
    }

    /// Unix seconds of the oldest change waiting for a commit (ignored items never wait),
    /// or nil when nothing waits.
    public static func oldest(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT min(dirtySince) FROM item WHERE dirty != 0 AND ignored = 0")
    }
}
