import CloudFileSystem
import DeviceFixture
import Foundation
import Inodes
import ItemModel
@testable import SyncEngine

/// Random everyday changes for the clean-room reader's containers, from a seed: files of
/// every size class (empty, inline, packed, several blocks; databases; edits in place),
/// folders, renames and moves, deletes of files and whole folders, modes, times, xattrs,
/// symlinks and hard links, on whichever device the seed says, with syncs between (so the
/// devices also meet in conflicts).
struct ReaderWorkload {
    var rng: SplitMix64
    var counter = 0

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func step(_ device: TestDevice) async throws {
        counter += 1
        let tree = try Self.tree(device)
        let folders = [""] + tree.filter { $0.kind == .directory }.map(\.path)
        let files = tree.filter { $0.kind == .file }.map(\.path)
        let folder = rng.pick(folders) ?? ""
        switch rng.below(12) {
        case 0, 1:
            let name = "f\(counter)" + (rng.pick([".txt", ".bin", ".tar.gz", ""]) ?? "")
            try await device.write(Self.join(folder, name), content())
        case 2:
            guard let file = rng.pick(files), let ino = device.inode(file) else { return }
            let size = Int(try device.core.attributes(ino).size)
            if size > 300_000 && rng.chance(50) {
                // A program editing in place: the file is cut fine from then on, and its
                // next records say its blocks as splices (format 5).
                let bytes = (0..<(1 + rng.below(8192))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                // Here first, as an open for writing fetches it.
                _ = try await device.readBytes(file)
                guard try await device.waitUntilLocal(file) else { return }
                try await IncrementalUploadTests.write(device, file, bytes, at: rng.below(size))
            } else {
                try await device.write(file, content())
            }
        case 3: try device.mkdir(Self.join(folder, "d\(counter)"))
        case 4:
            guard let item = rng.pick(tree) else { return }
            let into = folders.filter { $0 != item.path && !$0.hasPrefix(item.path + "/") }
            try device.rename(item.path, Self.join(rng.pick(into) ?? "", "r\(counter)"))
        case 5:
            if let item = rng.pick(tree) { try Self.removeAll(device, item.path, kind: item.kind, in: tree) }
        case 6:
            guard let item = attributeTarget(tree), let ino = device.inode(item.path) else { return }
            let mode = rng.pick(item.kind == .directory ? [0o755, 0o700, 0o1777] : [0o600, 0o640, 0o755, 0o444]) ?? 0o644
            _ = try await device.core.setAttributes(ino, AttributeChanges(mode: UInt32(mode)), handle: nil)
        case 7:
            guard let item = attributeTarget(tree), let ino = device.inode(item.path) else { return }
            let time = 978_307_200_000_000_000 + Int64(rng.below(900_000_000)) * 1_000_000_007
            _ = try await device.core.setAttributes(ino, AttributeChanges(mtime: .at(time)), handle: nil)
        case 8:
            guard let item = attributeTarget(tree), let ino = device.inode(item.path) else { return }
            let name = Array("user.k\(rng.below(3))".utf8)
            let value = (0..<(1 + rng.below(200))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            try device.core.setXattr(ino, name: name, value: value, flags: 0)
        case 9:
            let (parent, name) = try Self.place(device, Self.join(folder, "l\(counter)"))
            _ = try device.core.symlink(parent: parent, name: name, target: Array("../t/\(counter)".utf8), caller: TestDevice.caller)
        case 10:
            if let item = rng.pick(tree.filter { $0.kind != .directory }) { try device.link(item.path, Self.join(folder, "h\(counter)")) }
        default:
            try await device.sync()
        }
    }

    /// An item whose mode, time or xattrs change: now and then the root itself.
    mutating func attributeTarget(_ tree: [Entry]) -> Entry? {
        rng.chance(15) ? Entry(path: "", kind: .directory) : rng.pick(tree)
    }

    /// Empty, inline (at most 1 KiB), packed (at most 256 KiB), or several blocks.
    mutating func content() -> [UInt8] {
        let size = switch rng.below(10) {
        case 0: 0
        case 1, 2, 3: 1 + rng.below(1024)
        case 4, 5, 6, 7: 1025 + rng.below(100_000)
        default: 300_000 + rng.below(1_300_000)
        }
        let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        // Now and then a database: cut fine from its first upload.
        return size > 300_000 && rng.chance(30) ? FileCuttings.sqliteHeader + bytes : bytes
    }

    struct Entry { var path: String; var kind: ItemKind }

    /// Every item whose path is UTF-8 (what the workload names), parents first.
    static func tree(_ device: TestDevice) throws -> [Entry] {
        var entries: [Entry] = []
        func walk(_ ino: Inode, _ prefix: String) throws {
            for entry in try device.core.list(ino, after: 2, limit: 1_000_000) {
                guard let name = String(validating: entry.name, as: UTF8.self) else { continue }
                entries.append(Entry(path: join(prefix, name), kind: entry.attributes.kind))
                if entry.attributes.kind == .directory { try walk(entry.attributes.ino, join(prefix, name)) }
            }
        }
        try walk(Inode.root, "")
        return entries
    }

    static func removeAll(_ device: TestDevice, _ path: String, kind: ItemKind, in tree: [Entry]) throws {
        if kind == .directory {
            for inside in tree.reversed() where inside.path.hasPrefix(path + "/") { try device.remove(inside.path) }
        }
        try device.remove(path)
    }

    static func place(_ device: TestDevice, _ path: String) throws -> (Inode, [UInt8]) {
        let parts = path.split(separator: "/")
        let parent = parts.count > 1 ? device.inode(parts.dropLast().joined(separator: "/")) : Inode.root
        guard let parent, let last = parts.last else { throw FileSystemError(.notFound, path) }
        return (parent, Array(last.utf8))
    }

    static func join(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }
}
