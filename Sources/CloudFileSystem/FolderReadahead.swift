import Inodes
import ItemModel
import Synchronization

/// Readahead across the small files of a folder: a program that opens them one after
/// another in name order (`cat *`, `cp -r`, `grep -r`, an indexer) would wait a store
/// round trip per file; once two opens in a row go forward through a folder's small
/// placeholders, the next ones are fetched many at once, a window that doubles while the
/// run goes on (8 up to 128 files). A seek elsewhere, or a pause, starts over. Small
/// means one leading block (256 KiB): such a file is fetched whole by any read anyway.
final class FolderReadahead: Sendable {
    /// Where a run of opens through one folder stands.
    private struct Run {
        var last: ByteString
        var at: ContinuousClock.Instant
        var opens = 1
        /// The last name fetched ahead, and how many fetched files are still ahead.
        var fetchedThrough: ByteString?
        var ahead = 0
        var window = FolderReadahead.firstWindow
    }

    static let firstWindow = 8
    static let largestWindow = 128
    static let smallFile = ContainerInfo.leadingBlockSize
    private static let pause: Duration = .seconds(5)
    private let runs = Mutex<[Inode: Run]>([:])

    /// Notes the open of a small placeholder; the files to fetch ahead now, as "up to
    /// `count` after `after`", or nil.
    func noteOpen(parent: Inode, name: ByteString) -> (after: ByteString, count: Int)? {
        let now = ContinuousClock.now
        return runs.withLock { runs in
            guard var run = runs[parent], now - run.at < Self.pause, name > run.last else {
                if runs.count >= 64 { runs = runs.filter { now - $0.value.at < Self.pause } }
                runs[parent] = Run(last: name, at: now)
                return nil
            }
            run.opens += 1
            run.ahead = run.fetchedThrough.map { name < $0 ? max(0, run.ahead - 1) : 0 } ?? max(0, run.ahead - 1)
            (run.last, run.at) = (name, now)
            var want: (after: ByteString, count: Int)?
            if run.ahead < run.window / 2 {
                let from = run.fetchedThrough.map { $0 > name ? $0 : name } ?? name
                want = (from, run.window)
                // Counted as ahead at once, so the next open does not ask for them again.
                run.ahead += run.window
                run.window = min(run.window * 2, Self.largestWindow)
            }
            runs[parent] = run
            return want
        }
    }

    /// What a fetch ahead found: the last name (nil if none), and how many fewer files
    /// than asked for there were.
    func noteFetched(parent: Inode, through: ByteString?, short: Int) {
        runs.withLock { runs in
            guard var run = runs[parent] else { return }
            if let through, run.fetchedThrough.map({ through > $0 }) ?? true { run.fetchedThrough = through }
            run.ahead = max(0, run.ahead - short)
            runs[parent] = run
        }
    }
}
