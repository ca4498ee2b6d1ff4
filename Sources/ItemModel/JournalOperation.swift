/// One change in a journal record. An upsert carries the whole item (not a diff), so
/// replay is idempotent and needs no knowledge of what the writer saw.
public enum JournalOperation: Hashable, Sendable, Codable {
    case upsert(ItemSnapshot)
    case delete(ItemID)

    private enum Keys: String, CodingKey { case op, item, id }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(String.self, forKey: .op) {
        case "upsert": self = .upsert(try container.decode(ItemSnapshot.self, forKey: .item))
        case "delete": self = .delete(try container.decode(ItemID.self, forKey: .id))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .op, in: container, debugDescription: "unknown operation \(other)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .upsert(let item):
            try container.encode("upsert", forKey: .op)
            try container.encode(item, forKey: .item)
        case .delete(let id):
            try container.encode("delete", forKey: .op)
            try container.encode(id, forKey: .id)
        }
    }

    public var itemID: ItemID {
        switch self {
        case .upsert(let item): item.id
        case .delete(let id): id
        }
    }

    public var isDelete: Bool {
        if case .delete = self { true } else { false }
    }
}
