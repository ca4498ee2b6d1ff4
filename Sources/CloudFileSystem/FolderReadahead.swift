import Inodes
import ItemModel
import Synchronization

/// Readahead across the small files of a folder: a program that opens them one after
/// another (`cat *`, `cp -r`, `grep -r`, `tar`, an indexer) would wait a store round trip
/// per file. Once a small file of a folder that is not local is opened for reading, and
/// another small file of it within 5 s (in any order: globs sort by name, `find` and
/// `tar` go in directory order; local or not, so files fetched ahead count too), the
/// folder's small placeholders are fetched many at once, in name order: 8, then twice as
/// many each time the reader has opened half as many files as were fetched, up to 128 at
/// a time. A pause of 5 s starts over. Small means one leading block (256 KiB): such a
/// file is fetched whole by any read anyway.
final class FolderReadahead: Sendable {
    /// Where a run of opens through one folder stands.
    private struct Run {
        var at: ContinuousClock.Instant
        /// The last name fetched ahead (nil: from the start), and the files fetched that
        /// the reader has not opened yet (as far as it knows).
        var fetchedThrough: ByteString?
        var ahead = 0
        var window = FolderReadahead.firstWindow
        /// No placeholder was left to fetch.
        var exhausted = false
    }

    static let firstWindow = 8
    static let largestWindow = 128
    static let smallFile = ContainerInfo.leadingBlockSize
    private static let pause: Duration = .seconds(5)
    private let runs = Mutex<[Inode: Run]>([:])

    /// Notes the open for reading of a small file of `parent` (`local`: its content is
    /// here); the files to fetch ahead now, as "up to `count` small placeholders after
    /// `after` (nil: from the start)". A folder whose files are all local costs a lookup.
    func noteOpen(parent: Inode, local: Bool) -> (after: ByteString?, count: Int)? {
        let now = ContinuousClock.now
        return runs.withLock { runs in
            guard var run = runs[parent], now - run.at < Self.pause else {
                guard !local else { return nil }
                if runs.count >= 64 { runs = runs.filter { now - $0.value.at < Self.pause } }
                runs[parent] = Run(at: now)
                return nil
            }
            run.at = now
            run.ahead = max(0, run.ahead - 1)
            var want: (after: ByteString?, count: Int)?
            if !run.exhausted && run.ahead < run.window / 2 {
                want = (run.fetchedThrough, run.window)
                // Counted as ahead at once, so the next open does not ask for them again.
                run.ahead += run.window
                run.window = min(run.window * 2, Self.largestWindow)
            }
            runs[parent] = run
            return want
        }
    }

    /// What a fetch ahead found: the last name (nil if none), and how many fewer files
    /// than asked for there were. Past the last name it starts from the first again
    /// (files opened out of name order leave placeholders behind the cursor), and stops
    /// once a pass from the first finds nothing.
    func noteFetched(parent: Inode, from after: ByteString?, through: ByteString?, short: Int) {
        runs.withLock { runs in
            guard var run = runs[parent] else { return }
            run.ahead = max(0, run.ahead - short)
            if let through {
                run.fetchedThrough = through
            } else {
                run.exhausted = after == nil
                run.fetchedThrough = nil
            }
            if short > 0 && through != nil { run.fetchedThrough = nil }
            runs[parent] = run
        }
    }
}
