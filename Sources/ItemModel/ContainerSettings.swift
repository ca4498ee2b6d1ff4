/// What every device of a container agrees on, carried by the journal: a record with
/// `settings` replaces them from that record on, and a checkpoint carries those in force.
/// A record without it changes nothing; a container whose journal never set them has the
/// defaults.
public struct ContainerSettings: Hashable, Sendable, Codable {
    public var retention: Retention
    /// Format 4: what merges (`MergeKinds`); nil: the defaults, as in a container whose
    /// journal never set it.
    public var merge: MergeKinds?

    /// The kinds that merge.
    public var merging: MergeKinds { merge ?? .standard }

    /// How long history is kept, in seconds: versions of files (each file's newest
    /// always stays) and trash entries (deleted items and what they held).
    public struct Retention: Hashable, Sendable, Codable {
        public var versions: Int64
        public var trash: Int64

        public static let day: Int64 = 86400
        public static let standard = Retention(versions: 30 * day, trash: 30 * day)
        /// A century: more is a typo, not a retention.
        public static let longest: Int64 = 36525 * day

        public init(versions: Int64, trash: Int64) {
            self.versions = versions
            self.trash = trash
        }

        public var isValid: Bool { (0...Self.longest).contains(versions) && (0...Self.longest).contains(trash) }
    }

    public static let standard = ContainerSettings(retention: .standard)

    public init(retention: Retention) {
        self.retention = retention
    }
}
