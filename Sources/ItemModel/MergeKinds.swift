/// Format 4: which kinds of file are merged when two devices changed them since the
/// version they shared (`ContainerSettings.merge`); a kind off keeps both as today, the
/// other device's version beside the file as a conflict copy. Text merges by default;
/// databases and JSON only when a user turns them on.
public struct MergeKinds: Hashable, Sendable, Codable {
    public var text: Bool
    public var sqlite: Bool
    public var json: Bool

    public static let standard = MergeKinds(text: true, sqlite: false, json: false)
    /// Every kind by its name in records and on the command line.
    public static let names = ["text", "sqlite", "json"]

    public init(text: Bool, sqlite: Bool, json: Bool) {
        (self.text, self.sqlite, self.json) = (text, sqlite, json)
    }

    /// A missing kind takes its default; unknown ones are ignored (a later format's).
    public init(from decoder: any Decoder) throws {
        let values = try decoder.singleValueContainer().decode([String: Bool].self)
        let standard = Self.standard
        self.init(text: values["text"] ?? standard.text, sqlite: values["sqlite"] ?? standard.sqlite, json: values["json"] ?? standard.json)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(["text": text, "sqlite": sqlite, "json": json])
    }

    public subscript(name: String) -> Bool? {
        get {
            switch name {
            case "text": text
            case "sqlite": sqlite
            case "json": json
            default: nil
            }
        }
        set {
            guard let newValue else { return }
            switch name {
            case "text": text = newValue
            case "sqlite": sqlite = newValue
            case "json": json = newValue
            default: break
            }
        }
    }
}
