/// The whole tree as of a journal sequence (`checkpoints/<seq>`), so a new device loads
/// one object instead of replaying the journal. Items are sorted by id, so any device
/// writing the checkpoint for a given seq writes the same bytes.
public struct Checkpoint: Hashable, Sendable, Codable {
    public static let currentFormat = 1

    public var format: Int
    public var seq: UInt64
    public var items: [ItemSnapshot]
    /// The settings in force at `seq`; nil in a checkpoint of a journal that never set them.
    public var settings: ContainerSettings?
    /// The root's attributes as committed at `seq`; nil if no record carried them.
    public var root: RootAttributes?

    public init(seq: UInt64, items: [ItemSnapshot]) {
        self.format = Self.currentFormat
        self.seq = seq
        self.items = items.sorted { $0.id < $1.id }
    }
}
