import Metrics

/// What the engine counts for a mount's metrics (since the daemon started): commits and
/// the races lost, how long a commit takes (planning, its uploads and the record's put),
/// conflicts and merges made here, and what collections did.
public final class EngineMetrics: Sendable {
    public let commits = Counter()
    public let commitRaces = Counter()
    public let commitDurations = Histogram()
    public let conflicts = Counter()
    public let merges = Counter()
    public let collections = Counter()
    public let collectedObjects = Counter()
    public let collectedBytes = Counter()
    public let compactedRecords = Counter()

    public init() {}

    func noteCollection(_ report: CollectionReport) {
        collections.add()
        collectedObjects.add(UInt64(clamping: report.deleted))
        collectedBytes.add(UInt64(clamping: report.deletedBytes))
        compactedRecords.add(UInt64(clamping: report.recordsCompacted ?? 0))
    }
}
