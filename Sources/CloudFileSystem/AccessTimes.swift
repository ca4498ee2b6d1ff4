import Inodes
import Synchronization

/// Access times as a local filesystem keeps them: this device's own (never synced: other
/// devices' reads are not this device's), moved by opens for reading and folder listings
/// by the mount's rule (`relatime` by default), and kept in memory until a batch is
/// written (`FileSystemCore.flushAccessTimes`): a read costs no database write.
public final class AccessTimes: Sendable {
    /// `mount -o relatime|strictatime|noatime`.
    public enum Rule: String, Sendable, CaseIterable {
        /// When the access time is not after the modification or change time, or is a day old.
        case relatime
        /// At every access.
        case strictatime
        /// Never (explicit `touch -a` still sets it).
        case noatime
    }

    let rule: Rule
    /// `nodiratime`: folder listings leave folders' access times alone.
    let folders: Bool
    /// Times not yet written, by inode.
    private let pending = Mutex<[Inode: Int64]>([:])
    /// Written once this many are pending (an occasional batch on an open, never one per read).
    static let batch = 512
    static let day: Int64 = 86_400 * 1_000_000_000

    public init(rule: Rule = .relatime, folders: Bool = true) {
        self.rule = rule
        self.folders = folders
    }

    /// The access time to show: the newest of the stored one and a pending one.
    func current(_ ino: Inode, stored: Int64) -> Int64 {
        max(stored, pending.withLock { $0[ino] } ?? stored)
    }

    /// Notes an access at `now` of an item with these times, by the rule; true when its
    /// access time moved (the kernel's cached attributes are then stale).
    func access(_ ino: Inode, atime stored: Int64, mtime: Int64, ctime: Int64, folder: Bool, now: Int64) -> Bool {
        if rule == .noatime || (folder && !folders) { return false }
        return pending.withLock { pending in
            let atime = max(stored, pending[ino] ?? stored)
            let due = switch rule {
            case .strictatime: atime != now
            case .relatime: atime <= mtime || atime <= ctime || now - atime >= Self.day
            case .noatime: false
            }
            if due { pending[ino] = now }
            return due
        }
    }

    /// An explicit time (`touch -a`, `utimensat`) replaces what reads noted.
    func forget(_ ino: Inode) {
        _ = pending.withLock { $0.removeValue(forKey: ino) }
    }

    var isFull: Bool { pending.withLock { $0.count >= Self.batch } }

    /// Takes every pending time, to be written; `restore` puts them back if that fails.
    func take() -> [Inode: Int64] {
        pending.withLock { pending in
            defer { pending = [:] }
            return pending
        }
    }

    func restore(_ times: [Inode: Int64]) {
        pending.withLock { pending in pending.merge(times) { newer, older in max(newer, older) } }
    }
}
