import Glibc
import Inodes
import ItemModel
import SyncEngine
import Synchronization

/// In-memory facts about inodes the kernel and programs are using right now: open
/// handles, lookup counts, write generations. One Mutex, held only for map updates
/// (a leaf in the lock order: nothing else is taken while it is held).
public final class HandleTable: LocalActivity {
    /// An inode in use beyond the kernel's lookups: open, written, replaced or unlinked.
    struct Live {
        var openCount = 0
        var writers = 0
        var writeGeneration: UInt64 = 0
        /// The write generation at the last fsync: a file fsynced since its last write may be uploaded while open.
        var syncedGeneration: UInt64 = 0
        /// The database already says "content changed" for the current generation.
        var markedDirty = false
        /// Cached pages may be stale: the next open must not keep them.
        var contentReplaced = false
        /// The kernel may hold pages of it: not known otherwise, unless the item was just
        /// created and only opened around the page cache since.
        var mayHaveCachedPages = true
        /// Unlinked here: drop the row once nothing uses the inode.
        var unlinked = false

        var isIdle: Bool {
            openCount == 0 && !contentReplaced && !unlinked && !markedDirty
        }
    }

    private struct State {
        var live: [Inode: Live] = [:]
        /// The kernel's lookup count of every inode it holds, apart from `live`: it holds
        /// every item a program has looked at, and a 48-byte `Live` each made a stat of
        /// 100,000 items cost 13 MB more.
        var lookups: [Inode: UInt64] = [:]
        var files: [UInt64: OpenFile] = [:]
        var nextHandle: UInt64 = 1
        /// When each item was last opened (nanoseconds): the cache budget evicts the oldest first.
        var lastUse: [Inode: Int64] = [:]
        /// What was written to large files since their content was committed, apart from
        /// `live` (kept while the file is idle), for at most `writtenLimit` files.
        var written: [Inode: WrittenRanges] = [:]

        /// Changes an inode's entry, and drops it when that leaves it idle.
        mutating func update<T: Sendable>(_ ino: Inode, _ body: (inout Live) -> T) -> T {
            var entry = live[ino] ?? Live()
            let result = body(&entry)
            if entry.isIdle { live.removeValue(forKey: ino) } else { live[ino] = entry }
            return result
        }
    }

    private let state = Mutex(State())

    public init() {}

    private func update<T: Sendable>(_ ino: Inode, _ body: (inout Live) -> T) -> T {
        state.withLock { $0.update(ino, body) }
    }

    private func peek<T>(_ ino: Inode, _ body: (Live) -> T) -> T {
        state.withLock { body($0.live[ino] ?? Live()) }
    }

    // MARK: Lookups

    func addLookup(_ ino: Inode) {
        state.withLock { $0.lookups[ino, default: 0] += 1 }
    }

    /// Returns true when the inode is no longer used and was unlinked here (purge it now).
    func forget(_ ino: Inode, _ count: UInt64) -> Bool {
        state.withLock { state in
            let held = state.lookups[ino] ?? 0
            let left = held - min(held, count)
            if left == 0 { state.lookups.removeValue(forKey: ino) } else { state.lookups[ino] = left }
            guard left == 0 else { return false }
            return state.update(ino) { live in
                let purge = live.unlinked && live.openCount == 0
                if purge { live.unlinked = false }
                return purge
            }
        }
    }

    func markUnlinked(_ ino: Inode) {
        update(ino) { $0.unlinked = true }
    }

    // MARK: Handles

    /// `wroteOnOpen`: the open itself changed the content (`O_TRUNC`, a create), which is
    /// the new writer's first write, not yet published.
    /// `created`: the item is new, so the kernel has no pages of it yet.
    func open(_ file: OpenFile, wroteOnOpen: Bool = false, created: Bool = false) -> (handle: UInt64, keepCache: Bool) {
        state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.files[handle] = file
            state.lastUse[file.ino] = Timestamp.now()
            var live = state.live[file.ino] ?? Live()
            if created && live.openCount == 0 { live.mayHaveCachedPages = false }
            if !file.bypassesPageCache { live.mayHaveCachedPages = true }
            live.openCount += 1
            if file.writable {
                // What was written before (and closed, or truncated by path) is published:
                // a program that opens the file for writing has written nothing yet, unless
                // its open did (any generation other than the current one says so).
                if live.writers == 0 { live.syncedGeneration = wroteOnOpen ? live.writeGeneration &- 1 : live.writeGeneration }
                live.writers += 1
            }
            let keep = !live.contentReplaced
            live.contentReplaced = false
            state.live[file.ino] = live
            return (handle, keep)
        }
    }

    func file(_ handle: UInt64) -> OpenFile? {
        state.withLock { $0.files[handle] }
    }

    /// The handle's partial file is local now: its reads and writes need no more checks.
    func contentComplete(_ handle: UInt64) {
        state.withLock { $0.files[handle]?.partial = nil }
    }

    /// Closes the handle's descriptor. Returns the file, whether it was the last writer,
    /// and whether the inode is now unused and unlinked (purge it).
    func close(_ handle: UInt64) -> (file: OpenFile, lastWriter: Bool, purge: Bool)? {
        let result: (OpenFile, Bool, Bool)? = state.withLock { state in
            guard let file = state.files.removeValue(forKey: handle) else { return nil }
            let lookedUp = state.lookups[file.ino] != nil
            return state.update(file.ino) { live in
                live.openCount -= 1
                var lastWriter = false
                if file.writable {
                    live.writers -= 1
                    lastWriter = live.writers == 0
                }
                let purge = live.unlinked && !lookedUp && live.openCount == 0
                if purge { live.unlinked = false }
                return (file, lastWriter, purge)
            }
        }
        if let result { Glibc.close(result.0.fd) }
        return result
    }

    /// Every descriptor, for shutdown.
    public func closeAll() {
        let fds = state.withLock { state in
            let fds = state.files.values.map(\.fd)
            state.files = [:]
            return fds
        }
        for fd in fds { Glibc.close(fd) }
    }

    // MARK: Content generations

    /// Files whose writes are followed at once; past it, one of them stops being followed
    /// (read whole at its next upload).
    static let writtenLimit = 4096

    /// A local content change, with what it changes: returns true if the database must now
    /// be told (first change since clean). A change of unknown extent ends the following
    /// of the file's writes until its next commit.
    func noteWrite(_ ino: Inode, _ change: ContentChange) -> Bool {
        state.withLock { state in
            if state.written[ino] != nil {
                switch change {
                case .written(let range):
                    state.written[ino]!.write(range)
                    if state.written[ino]!.isTooScattered { state.written.removeValue(forKey: ino) }
                case .truncated(let size): state.written[ino]!.truncate(to: size)
                case .unknown: state.written.removeValue(forKey: ino)
                }
            }
            return state.update(ino) { live in
                live.writeGeneration &+= 1
                if live.writeGeneration == 0 { live.writeGeneration = 1 }
                let first = !live.markedDirty
                live.markedDirty = true
                return first
            }
        }
    }

    /// The database write that recorded a change failed: say it again next time.
    func unmarkDirty(_ ino: Inode) {
        update(ino) { $0.markedDirty = false }
    }

    func noteFsync(_ ino: Inode) {
        update(ino) { $0.syncedGeneration = $0.writeGeneration }
    }

    /// A write went around the page cache: whether pages the kernel may hold must be
    /// dropped (asynchronous direct writes are not followed by the kernel's own drop).
    func directWriteNeedsInvalidation(_ ino: Inode) -> Bool {
        peek(ino) { $0.mayHaveCachedPages }
    }

    func markContentReplaced(_ ino: Inode) {
        update(ino) { $0.contentReplaced = true }
    }

    // MARK: LocalActivity

    public func hasWriters(_ ino: Inode) -> Bool {
        peek(ino) { $0.writers > 0 }
    }

    public var hasAnyWriters: Bool {
        state.withLock { state in state.live.values.contains { $0.writers > 0 } }
    }

    public func isBeingWritten(_ ino: Inode) -> Bool {
        peek(ino) { $0.writers > 0 && $0.syncedGeneration != $0.writeGeneration }
    }

    public func writeGeneration(_ ino: Inode) -> UInt64 {
        peek(ino) { $0.writeGeneration }
    }

    public func commitContent(_ ino: Inode, generation: UInt64, blocks: [BlockReference]) -> Bool {
        state.withLock { state in
            let clean = state.update(ino) { live in
                guard live.writeGeneration == generation else { return false }
                live.markedDirty = false
                return true
            }
            state.written.removeValue(forKey: ino)
            // Files of more than the leading blocks: smaller ones are read whole at no cost.
            guard clean, blocks.count > 2 else { return clean }
            if state.written.count >= Self.writtenLimit, let any = state.written.keys.first { state.written.removeValue(forKey: any) }
            state.written[ino] = WrittenRanges(base: WrittenRanges.base(of: blocks), length: blocks.reduce(0) { $0 + $1.length })
            return clean
        }
    }

    public func writtenRanges(_ ino: Inode) -> WrittenRanges? {
        state.withLock { $0.written[ino] }
    }

    public func contentReplaced(_ ino: Inode) {
        state.withLock { _ = $0.written.removeValue(forKey: ino) }
    }

    public func contentDiscarded(_ ino: Inode) {
        state.withLock { _ = $0.written.removeValue(forKey: ino) }
        update(ino) { $0.markedDirty = false }
        // Its last use only ranked local content for eviction; forgetting it keeps the map
        // to what is cached, not to every inode ever opened.
        _ = state.withLock { $0.lastUse.removeValue(forKey: ino) }
    }

    public func isOpen(_ ino: Inode) -> Bool {
        peek(ino) { $0.openCount > 0 }
    }

    public func lastUse(_ ino: Inode) -> Int64? {
        state.withLock { $0.lastUse[ino] }
    }

    /// Counts a lookup of an inode only if the kernel or a handle still uses it (an unlinked
    /// item is purged once nothing does): one step, so a purge cannot come in between.
    func addLookupIfReferenced(_ ino: Inode) -> Bool {
        state.withLock { state in
            guard state.lookups[ino] != nil || (state.live[ino]?.openCount ?? 0) > 0 else { return false }
            state.lookups[ino, default: 0] += 1
            return true
        }
    }

    public func isReferenced(_ ino: Inode) -> Bool {
        state.withLock { $0.lookups[ino] != nil || ($0.live[ino]?.openCount ?? 0) > 0 }
    }
}
