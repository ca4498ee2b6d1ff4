import Foundation
import Glibc
import GRDB
import Inodes
import ItemModel
import Logging
import MetadataStore

/// Ignored items through `ubiqfs reset`: their only copy is here, so the reset moves
/// their content and what they are to `kept/<time>/` (an `items.json` and one file per
/// file), and the next mount puts them back, ignored, at their paths once it has pulled
/// the container (their folders are among its items). A folder gone from the container
/// meanwhile comes back ignored; a name taken meanwhile gives the kept item `name (2)`.
public enum KeptIgnoredItems {
    static let folder = "kept"
    static let manifest = "items.json"

    /// One item as kept: its path from the top, what it is, and its content's file name.
    struct Entry: Codable {
        var path: [Data]
        var kind: String
        var mode: UInt32
        var uid: UInt32
        var gid: UInt32
        var mtime: Int64
        var target: Data?
        var rdev: Int64?
        var marks: Int
        var content: String?
    }

    /// Before a reset (the state dir's lock held, no daemon): moves every ignored item out
    /// of the state that goes. Returns how many it kept.
    public static func save(stateDir: String) throws -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: stateDir + "/" + StateRecovery.databaseName, configuration: configuration)
        let entries = try queue.read { db -> [(Entry, Inode)] in
            try ItemRow.ignoredItems(db).map { row in
                var path: [Data] = []
                var current: ItemRow? = row
                while let item = current, item.inode != Inode.root, path.count < 4096 {
                    path.insert(Data(item.itemName.bytes), at: 0)
                    current = try item.parent.flatMap { try ItemRow.find(ino: $0, db) }
                }
                let entry = Entry(
                    path: path, kind: row.itemKind.rawValue, mode: UInt32(row.mode), uid: UInt32(row.uid), gid: UInt32(row.gid), mtime: row.mtime,
                    target: row.symlinkTarget.map { Data($0.bytes) }, rdev: row.rdev, marks: row.ignoreMarks.rawValue,
                    content: row.itemKind == .file ? row.inode.description : nil
                )
                return (entry, row.inode)
            }
        }
        try queue.close()
        guard !entries.isEmpty else { return 0 }
        let target = stateDir + "/" + folder + "/" + String(Int(Date().timeIntervalSince1970 * 1000))
        try Syscall.makeDirectories(target, mode: 0o700)
        for (entry, ino) in entries where entry.content != nil {
            let source = stateDir + "/cache/" + ino.description
            if access(source, F_OK) == 0 { try Syscall.check("rename") { rename(source, target + "/" + ino.description) } }
        }
        let data = try JSONEncoder().encode(entries.map(\.0))
        try data.write(to: URL(fileURLWithPath: target + "/" + manifest), options: .atomic)
        try Syscall.fsyncDirectory(target)
        try Syscall.fsyncDirectory(stateDir + "/" + folder)
        try Syscall.fsyncDirectory(stateDir)
        return entries.count
    }

    /// After a mount's first pull: every kept item back, ignored. Returns their paths.
    @discardableResult
    public static func restore(stateDir: String, core: FileSystemCore, logger: Logger) throws -> [String] {
        let root = stateDir + "/" + folder
        let stamps = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
        var restored: [String] = []
        for stamp in stamps {
            let place = root + "/" + stamp
            guard let data = FileManager.default.contents(atPath: place + "/" + manifest) else { continue }
            var failed = false
            var placed: [[Data]: Inode] = [:]
            for entry in try JSONDecoder().decode([Entry].self, from: data) {
                let shown = entry.path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
                do {
                    let ino = try core.restoreIgnored(entry, contentDirectory: place, placed: placed)
                    if entry.kind == ItemKind.directory.rawValue { placed[entry.path] = ino }
                    restored.append(shown)
                } catch {
                    // Kept for the next mount, which puts back what is not back yet.
                    logger.error("cannot put back the ignored item \(shown) kept through a reset; it stays in \(place): \(error)")
                    failed = true
                }
            }
            if !failed { try FileManager.default.removeItem(atPath: place) }
        }
        if !stamps.isEmpty, (try FileManager.default.contentsOfDirectory(atPath: root)).isEmpty { try FileManager.default.removeItem(atPath: root) }
        if !restored.isEmpty { logger.notice("put back \(restored.count) ignored item(s) kept through a reset") }
        return restored
    }
}
