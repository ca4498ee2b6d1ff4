/// Which items stay on this device, by path: the `.ubiqfsignore` file of every folder
/// above an item (the deepest first), then the device's own list, as git reads
/// `.gitignore` files and `info/exclude`; and every name ending in `.nosync`, whatever
/// the patterns say. What is inside an ignored folder is ignored: no pattern brings it back.
public struct IgnoreRules: Sendable {
    /// The name of the file that holds a folder's patterns.
    public static let fileName = ".ubiqfsignore"
    /// Names ending so are ignored (as on iCloud).
    public static let localSuffix = Array(".nosync".utf8)

    /// Why an item is ignored.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// Its name ends in `.nosync`.
        case localName
        /// A pattern of a list matched it.
        case pattern(String, source: String)
        /// A folder above it is ignored, for that reason.
        indirect case inside(folder: [UInt8], Reason)

        public var description: String {
            switch self {
            case .localName: "its name ends in .nosync"
            case .pattern(let line, let source): "\"\(line)\" in \(source)"
            case .inside(let folder, let reason): "it is inside \(String(decoding: folder, as: UTF8.self)), ignored: \(reason)"
            }
        }
    }

    /// Every folder's list, by folder path (`""` for the top).
    private var lists: [[UInt8]: IgnoreList] = [:]
    /// The device's own patterns, the weakest.
    public let device: IgnoreList

    public init(device: IgnoreList = IgnoreList(folder: [], source: "this device's list", patterns: [])) {
        self.device = device
    }

    /// Sets (or, with no patterns, drops) the list of a folder.
    public mutating func set(_ list: IgnoreList) {
        lists[list.folder] = list.patterns.isEmpty ? nil : list
    }

    /// Why the item at `path` (relative to the top, `a/b/c`) is ignored; nil if it is not.
    public func reason(for path: [UInt8], isDirectory: Bool) -> Reason? {
        let slashes = path.indices.filter { path[$0] == UInt8(ascii: "/") }
        for end in slashes {
            let folder = Array(path[..<end])
            if let reason = ownReason(for: folder, isDirectory: true) { return .inside(folder: folder, reason) }
        }
        return ownReason(for: path, isDirectory: isDirectory)
    }

    /// Why the item at `path` is ignored, its folders not asked: its name, then the
    /// patterns of the folders above it, the deepest first, then the device's.
    public func ownReason(for path: [UInt8], isDirectory: Bool) -> Reason? {
        let nameStart = (path.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 }) ?? 0
        if path[nameStart...].reversed().starts(with: Self.localSuffix.reversed()) { return .localName }
        guard let (pattern, list) = decidingPattern(for: path, isDirectory: isDirectory), !pattern.negated else { return nil }
        return .pattern(pattern.line, source: list.source)
    }

    /// The pattern that decides for the item at `path`, its folders not asked: the last
    /// that matches it in the first list with one (a negated one keeps the item).
    public func decidingPattern(for path: [UInt8], isDirectory: Bool) -> (IgnorePattern, IgnoreList)? {
        let nameStart = (path.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 }) ?? 0
        for list in applying(to: path, nameStart: nameStart) {
            if let pattern = list.lastMatch(path, isDirectory: isDirectory) { return (pattern, list) }
        }
        return nil
    }

    /// The lists that apply to an item, in the order they are asked.
    private func applying(to path: [UInt8], nameStart: Int) -> [IgnoreList] {
        var result: [IgnoreList] = []
        var end = nameStart - 1
        while end > 0 {
            if let list = lists[Array(path[..<end])] { result.append(list) }
            end = path[..<end].lastIndex(of: UInt8(ascii: "/")) ?? 0
        }
        if let top = lists[[]] { result.append(top) }
        if !device.patterns.isEmpty { result.append(device) }
        return result
    }
}
