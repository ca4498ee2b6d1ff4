import ItemModel

/// Timing and batching of the sync engine; tests shorten the intervals.
public struct SyncConfiguration: Sendable {
    /// How often the journal is checked for other devices' commits.
    public var pollInterval: Duration = .seconds(2)
    /// Store transfers at once in each direction (blocks of any files; `--transfers`):
    /// over a far store, what overlaps is what goes fast (64 small files at 50 ms of
    /// round trip are 1,280 a second). `TransferGate` lowers it while the store throttles.
    public var transfers = 64
    /// The bytes those transfers may hold in memory at once, per direction (a block is up
    /// to 4 MiB: 16 of them).
    public var transferBytesInFlight: Int64 = 64 << 20
    /// `--bwlimit`: the upload and download pace, or nil for as fast as the store goes.
    public var uploadBytesPerSecond: Int64?
    public var downloadBytesPerSecond: Int64?
    /// The longest a single store request may take before it counts as unreachable.
    public var storeTimeout: Duration = .seconds(60)
    /// The longest wait between retries while the store keeps failing.
    public var maxBackoff: Duration = .seconds(60)
    /// Quiet time after the last local change before it is pushed (editors save in bursts).
    public var debounce: Duration = .milliseconds(500)
    /// The longest a local change waits while more keep coming (a long build or copy):
    /// until then, polls during the burst only pull.
    public var maxPushDelay: Duration = .seconds(10)
    /// The longest a deleted file's content waits for a sync of the state database that
    /// makes its delete durable before it is removed (an fsync by any program is sooner):
    /// the disk space of an `rm` comes back within it, one database sync for all of them.
    public var removalDelay: Duration = .seconds(2)
    /// Every this many journal records, the committing device writes a checkpoint.
    public var checkpointInterval: UInt64 = 1000
    /// Operations per journal record, so records stay small enough to read quickly.
    public var maxOperationsPerRecord = 2000
    /// The largest record this device writes; never above what readers take
    /// (`RecordCodec.maxRecordSize`). A push that encodes larger is cut.
    public var maxRecordBytes = RecordCodec.maxRecordSize
    /// How long an unmount waits for the last push before leaving it for the next mount.
    public var shutdownPushTimeout: Duration = .seconds(30)
    /// How long that last push waits for a store that does not answer (unreachable or
    /// hanging) before it leaves what is pending for the next mount.
    public var shutdownStallLimit: Duration = .seconds(6)
    /// Collection's grace period (format 2): a collector deletes what it condemned only
    /// this long after, and a writer lists the condemned objects at most a quarter of it
    /// before each commit. Every device of a container must use the same (tests shorten it).
    public var collectionGrace: Duration = .seconds(3600)
    /// How long a compactor waits after it first sees a checkpoint before it compacts the
    /// records up to it (format 2): a device online within it never needs to rejoin.
    public var compactionHorizon: Duration = .seconds(7 * 86400)
    /// An encrypted container's passphrase, whether to create one, and where the key is kept.
    public var encryption = ContainerUnlock()
    /// Collection repacks a pack of which less than this share of the bytes is named
    /// (format 2): its named blobs move to a new pack, and the old one goes.
    public var repackBelow = 0.5
    /// How often a pull that finds no next record lists checkpoints to see whether it is
    /// gone (records lost another way than compaction, which leaves tombstones).
    public var gapCheckInterval: Duration = .seconds(60)
    /// How often a device that can collect does so by itself (about daily; 0: never).
    public var collectionInterval: Duration = .seconds(24 * 3600)
    /// A read-only mount: other devices' changes are applied, nothing is ever pushed (a
    /// change left pending by an earlier read-write mount waits for the next one).
    public var readOnly = false
    /// The newest format this device reads: used for a container it creates, and an older
    /// container is upgraded to it at a read-write mount. Lower only as a device of an
    /// earlier release (`UBIQFS_FORMAT=1` or `2`, tests).
    public var newestFormat = ContainerInfo.newestFormat
    var readableFormats: ClosedRange<Int> { ContainerInfo.readableFormats(newest: newestFormat) }

    public init() {}
}
