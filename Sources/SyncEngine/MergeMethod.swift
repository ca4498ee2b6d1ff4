import DatabaseMerge
import ItemModel

/// How a file held for a merge is merged, by what it is: an SQLite database (by its header),
/// a JSON file (by its name), or text; each kind only when the container's setting
/// (`MergeKinds`) has it on.
enum MergeMethod: String, Sendable {
    case text, sqlite, json

    /// The most any kind merges: an edit here larger than this is not even read.
    static let largestOfAnyKind: Int64 = 64 << 20

    /// The kind's name in records (`MergeNote.kind`) and settings.
    var name: String { rawValue }

    /// The most each side may weigh: text and JSON are merged in memory, databases on disk.
    var largest: Int64 { self == .sqlite ? Self.largestOfAnyKind : 8 << 20 }

    /// The method for a file named `name` whose edit here is `ours`.
    static func of(name: String, ours: [UInt8]) -> MergeMethod {
        DatabaseMerge.isDatabase(ours) ? .sqlite : name.lowercased().hasSuffix(".json") ? .json : .text
    }

    /// Why a file of this kind does not merge under `kinds` (its kind is off); nil if it may.
    func refusal(_ kinds: MergeKinds) -> String? {
        kinds[name] == true ? nil : "merging of \(description) is off"
    }

    var description: String {
        switch self {
        case .text: "text"
        case .sqlite: "SQLite databases"
        case .json: "JSON files"
        }
    }
}
