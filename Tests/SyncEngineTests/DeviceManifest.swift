import CloudFileSystem
import ContentCache
import DeviceFixture
import Foundation
import Inodes
import ItemModel
import MetadataStore

/// What a device shows of a container, as lines of canonical JSON in the shape the
/// clean-room reader prints (Tests/FormatReader): every item reachable from the root with
/// its metadata and a hash of its content, each file's versions, and the trash. Two
/// views are the same when their lines are.
enum DeviceManifest {
    struct Lines: Equatable {
        var items: [String]
        var versions: [String]
        var trash: [String]
    }

    static func of(_ device: TestDevice) async throws -> Lines {
        var lines = Lines(items: [], versions: [], trash: [])
        // The root's own attributes, with the path [], once the store said them (before,
        // each device shows its own, which no reader of the store can know).
        if try await device.metadata.read({ db in try RootState.base(db) }) != nil {
            let root = try device.core.attributes(.root)
            var top: [String: Any] = ["path": [Any](), "kind": "directory", "mode": Int64(root.permissions & 0o7777), "mtime": root.mtime, "size": 0]
            let xattrs = try self.xattrs(device, .root)
            if !xattrs.isEmpty { top["xattrs"] = xattrs }
            lines.items.append(canonical(top))
        }
        try await walk(device, Inode.root, [], &lines)
        lines.trash = try device.core.trash().map { entry in
            canonical(["path": (entry.folder + [entry.top.name]).map { byteString($0.bytes) }, "seq": Int64(entry.seq), "device": entry.device, "time": entry.time, "items": entry.items.count])
        }
        return lines.sorted()
    }

    /// The reader's output (`{"items": [...], "versions": [...], "trash": [...]}`) in lines.
    static func parse(readerOutput: Data) throws -> Lines {
        guard let object = try JSONSerialization.jsonObject(with: readerOutput) as? [String: Any] else {
            throw ManifestError("the reader's output is not a JSON object")
        }
        func list(_ key: String) throws -> [String] {
            guard let entries = object[key] as? [[String: Any]] else { throw ManifestError("the reader's output has no list \(key)") }
            return entries.map(canonical)
        }
        guard let files = object["versions"] as? [[String: Any]] else { throw ManifestError("the reader's output has no list versions") }
        var versions: [String] = []
        for file in files {
            for var version in file["versions"] as? [[String: Any]] ?? [] {
                version["path"] = file["path"]
                versions.append(canonical(version))
            }
        }
        return Lines(items: try list("items"), versions: versions, trash: try list("trash")).sorted()
    }

    private static func walk(_ device: TestDevice, _ folder: Inode, _ path: [Any], _ lines: inout Lines) async throws {
        for entry in try device.core.list(folder, after: 2, limit: 1_000_000) {
            let ino = entry.attributes.ino
            let here = path + [byteString(entry.name)]
            // A folder's size is the mount's own (4096, as ext4 shows); the format's is 0.
            let size = entry.attributes.kind == .directory ? 0 : entry.attributes.size
            var item: [String: Any] = [
                "path": here, "kind": entry.attributes.kind.rawValue, "mode": Int64(entry.attributes.permissions & 0o7777),
                "mtime": entry.attributes.mtime, "size": size,
            ]
            let xattrs = try self.xattrs(device, ino)
            if !xattrs.isEmpty { item["xattrs"] = xattrs }
            switch entry.attributes.kind {
            case .directory:
                try await walk(device, ino, here, &lines)
            case .file:
                item["sha256"] = try await contentHash(device, ino, size: entry.attributes.size)
                for version in try device.core.versions(ino).versions {
                    var line: [String: Any] = ["path": here, "seq": Int64(version.seq), "device": version.device, "time": version.time, "size": version.size]
                    if version.input > 0 { line["input"] = version.input }
                    if let with = version.mergedWith { line["mergedWith"] = Int64(with) }
                    lines.versions.append(canonical(line))
                }
            case .symlink:
                item["target"] = byteString(try device.core.readlink(ino))
            case .characterDevice, .blockDevice:
                item["rdev"] = Int64(bitPattern: entry.attributes.rdev)
            case .fifo, .socket:
                break
            case .link:
                throw ManifestError("a link's own row was listed at \(here)")
            }
            // A file with several names: every name is listed, each with the count.
            if entry.attributes.kind != .directory && entry.attributes.nlink > 1 { item["names"] = Int64(entry.attributes.nlink) }
            lines.items.append(canonical(item))
        }
    }

    private static func contentHash(_ device: TestDevice, _ ino: Inode, size: Int64) async throws -> String {
        let handle = try await device.open(ino, flags: O_RDONLY)
        defer { device.core.release(handle: handle) }
        return ContentHasher.sha256Hex(try await device.core.read(handle: handle, size: Int(size) + 1, offset: 0))
    }

    /// Name and value pairs in byte order of the names: not an object, whose names Swift
    /// would merge when they are canonically equivalent.
    private static func xattrs(_ device: TestDevice, _ ino: Inode) throws -> [[String]] {
        var result: [[String]] = []
        for name in try device.core.listXattrs(ino).split(separator: 0).map(Array.init).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let text = String(decoding: name, as: UTF8.self)
            guard text.hasPrefix("user."), !text.hasPrefix("user.ubiqfs.") else { continue }
            result.append([text, Data(try device.core.getXattr(ino, name: name)).base64EncodedString()])
        }
        return result
    }

    /// A name as the format writes bytes: a string when it is UTF-8, else base64.
    static func byteString(_ bytes: [UInt8]) -> Any {
        String(validating: bytes, as: UTF8.self) ?? ["base64": Data(bytes).base64EncodedString()]
    }

    static func canonical(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    struct ManifestError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Lines are compared as their UTF-8 bytes: Swift's String equality would call two
/// spellings of one name in Unicode (NFC, NFD) equal, and names are bytes.
extension DeviceManifest.Lines {
    static func == (left: Self, right: Self) -> Bool {
        left.bytes == right.bytes
    }

    private var bytes: [[[UInt8]]] { [items, versions, trash].map { $0.map { Array($0.utf8) } } }

    func sorted() -> Self {
        func order(_ lines: [String]) -> [String] { lines.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        return .init(items: order(items), versions: order(versions), trash: order(trash))
    }

    /// The lines only one side has, for a failure message.
    func difference(from other: Self) -> String {
        var text: [String] = []
        for (name, mine, theirs) in [("items", items, other.items), ("versions", versions, other.versions), ("trash", trash, other.trash)] {
            let (mineBytes, theirBytes) = (Set(mine.map { Array($0.utf8) }), Set(theirs.map { Array($0.utf8) }))
            text += mine.filter { !theirBytes.contains(Array($0.utf8)) }.prefix(8).map { "\(name) only in the first: \($0)" }
            text += theirs.filter { !mineBytes.contains(Array($0.utf8)) }.prefix(8).map { "\(name) only in the second: \($0)" }
        }
        return text.joined(separator: "\n")
    }
}
