/// One commit: `journal/<seq>` in the store, written with put-if-absent so the
/// sequence numbers are a total order every device replays identically.
public struct JournalRecord: Hashable, Sendable, Codable {
    public static let currentFormat = 1
    /// The most operations (and blob moves) one record may hold: a reader refuses more
    /// before decoding them, so one record costs a bounded amount of memory. Writers cut
    /// their pushes well below it (2,000 operations and their dependencies).
    public static let maxOperations = 100_000

    public var format: Int
    /// The writing device's random id (stable per state dir) and its human name.
    public var device: String
    public var deviceName: String
    /// Unique per attempt: lets a device recognise its own commit whose reply was lost.
    public var commit: String
    /// Nanoseconds since the epoch, from the writer's clock (informational only).
    public var time: Int64
    public var ops: [JournalOperation]
    /// The container's settings from this record on (`ContainerSettings`); nil: unchanged.
    /// A device of an older version ignores the field, which only loses it the setting.
    public var settings: ContainerSettings?
    /// The same random id on every record of one push that took several (a large backlog
    /// cut into records): what a reader needs to see them as one change (the trash).
    public var batch: String?
    /// Set on a tombstone (format 2): this record was compacted, with every record up to
    /// `compacted`; read `checkpoints/<compacted>` instead. It keeps its key taken, so no
    /// writer behind can ever commit there (put-if-absent fails, and its pull rejoins).
    public var compacted: UInt64?
    /// Packed blobs a collector moved (format 2), applied after `ops`: every reference to
    /// a listed blob in the pack it left names its new place from this record on.
    public var relocate: [BlobMove]?
    /// Format 2: the SHA-256 (hex) of the previous record's bytes as stored (opened, in an
    /// encrypted container). A reader that applied another previous record refuses this
    /// one: the store showed two devices two histories.
    public var prev: String?
    /// The root's own attributes from this record on (`RootAttributes`); nil: unchanged.
    public var root: RootAttributes?
    /// Format 4: the files whose content in this record is a merge, and what it took in.
    public var merges: [MergeNote]?

    /// The tombstone put over a compacted record (`compacted`).
    public static func tombstone(format: Int, device: String, deviceName: String, through: UInt64, time: Int64) -> JournalRecord {
        var record = JournalRecord(device: device, deviceName: deviceName, commit: "", time: time, ops: [])
        record.format = format
        record.compacted = through
        return record
    }

    enum CodingKeys: String, CodingKey {
        case format, device, deviceName, commit, time, ops, settings, batch, compacted, relocate, prev, root, merges
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(Int.self, forKey: .format)
        device = try container.decode(String.self, forKey: .device)
        deviceName = try container.decode(String.self, forKey: .deviceName)
        commit = try container.decode(String.self, forKey: .commit)
        time = try container.decode(Int64.self, forKey: .time)
        ops = try Self.boundedList(container, .ops)
        settings = try container.decodeIfPresent(ContainerSettings.self, forKey: .settings)
        batch = try container.decodeIfPresent(String.self, forKey: .batch)
        compacted = try container.decodeIfPresent(UInt64.self, forKey: .compacted)
        relocate = try container.contains(.relocate) && !container.decodeNil(forKey: .relocate) ? Self.boundedList(container, .relocate) : nil
        prev = try container.decodeIfPresent(String.self, forKey: .prev)
        root = try container.decodeIfPresent(RootAttributes.self, forKey: .root)
        merges = try container.contains(.merges) && !container.decodeNil(forKey: .merges) ? Self.boundedList(container, .merges) : nil
    }

    /// A list of at most `maxOperations` elements, counted before any is decoded.
    private static func boundedList<Element: Decodable>(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> [Element] {
        var list = try container.nestedUnkeyedContainer(forKey: key)
        if let count = list.count, count > maxOperations {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(count) entries, more than the \(maxOperations) a record may hold")
        }
        var elements: [Element] = []
        elements.reserveCapacity(list.count ?? 0)
        while !list.isAtEnd {
            guard elements.count < maxOperations else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "more entries than the \(maxOperations) a record may hold")
            }
            elements.append(try list.decode(Element.self))
        }
        return elements
    }

    public init(device: String, deviceName: String, commit: String, time: Int64, ops: [JournalOperation]) {
        self.format = Self.currentFormat
        self.device = device
        self.deviceName = deviceName
        self.commit = commit
        self.time = time
        self.ops = ops
    }
}
