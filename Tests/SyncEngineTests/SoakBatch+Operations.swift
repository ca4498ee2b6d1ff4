import CloudFileSystem
import ContainerStore
import ContentCache
import DeviceFixture
import Foundation
import GRDB
import Glibc
import Inodes
import ItemModel
import MetadataStore
import SyncEngine
import Synchronization
import Testing

/// The random operations a device makes, each noted in the model.
extension SoakBatch {
    // MARK: Operations

    /// One random local change; returns its log line. Refusals the kernel would also give
    /// (a folder not empty, a move into itself) are logged and skipped; so are downloads
    /// that an offline device cannot make.
    func operation(_ index: Int, token: String, _ stats: inout SoakStats) async throws -> String {
        let device = devices[index]
        let all = try entries(device)
        let byPath = Dictionary(uniqueKeysWithValues: all.map { ($0.path, $0) })
        let files = all.filter { $0.kind == .file }
        // A long writer here writes nothing (`SoakBatch+Writers`): nor do this device's edits.
        let writable = files.filter { $0.ino != writers[index]?.ino }
        let folders = all.filter { $0.kind == .directory }
        let folderPaths = [""] + folders.map(\.path)
        func inside(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }
        func name(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
        func folder(_ path: String) -> String { path.split(separator: "/").dropLast().joined(separator: "/") }
        /// The ids of the folders on the way to `path` (the root excluded), and of the item there if any.
        func chain(_ path: String) -> [String] {
            var ids: [String] = []
            var prefix = ""
            for part in path.split(separator: "/") {
                prefix = prefix.isEmpty ? String(part) : prefix + "/" + part
                if let entry = byPath[prefix] { ids.append(entry.id) }
            }
            return ids
        }
        let model = { self.models[index] }
        func touch(_ ids: [String]) { windowTouched[index].formUnion(ids) }
        func contentChanged(_ entry: Entry) {
            models[index].writtenInodes.insert(entry.ino)
            models[index].contentEdits.insert(entry.id)
            touch(chain(entry.path))
        }
        func deleted(_ entry: Entry) throws {
            // One of several names: the item stays, under the others.
            if entry.names > 1 {
                touch(chain(folder(entry.path)))
                return
            }
            let inside = all.filter { $0.path.hasPrefix(entry.path + "/") }.map(\.id)
            // A change held here for a long writer is one this device has not seen: it
            // meets the delete as an edit does, and may bring the item back.
            let unseen = try device.metadata.read { db in try HeldChanges.all(db) }.map(\.itemID.rawValue)
            if model().known.contains(entry.id) && !unseen.contains(where: { $0 == entry.id || inside.contains($0) }) {
                windowDeleted.append((index, entry.id, inside, chain(folder(entry.path)), "\(device.name) deleted \(entry.path) in round \(round)"))
            }
        }
        func unlink(_ entry: Entry) throws {
            try device.core.unlink(parent: try parentInode(device, entry.path), name: Array(name(entry.path).utf8), directory: entry.kind == .directory)
            try deleted(entry)
        }

        /// A rename replaced `existing`: a new file continues its item (a safe save, so its
        /// content is a content change of that item); anything else deletes it.
        func renamedOver(_ existing: Entry, by source: Entry) throws {
            if source.kind == .file && existing.kind == .file && !model().known.contains(source.id) && existing.names == 1 && source.names == 1 {
                models[index].contentEdits.insert(existing.id)
                touch([existing.id])
            } else {
                try deleted(existing)
            }
        }

        var kind = ""
        var line = ""
        do {
            switch rng.below(31) {
            case 0..<3:
                kind = "create"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                line = "create \(path) = \(token.debugDescription)"
                let (attributes, handle) = try device.core.create(
                    parent: try parentInode(device, path), name: Array(name(path).utf8), mode: 0o644, flags: O_WRONLY, caller: TestDevice.caller
                )
                defer { device.core.release(handle: handle) }
                _ = try await device.core.write(handle: handle, bytes: Array(token.utf8), offset: 0)
                models[index].writtenInodes.insert(attributes.ino)
                touch(chain(folder(path)))
            case 3..<6:
                kind = "overwrite"
                guard let file = rng.pick(writable) else { return "overwrite: no file" }
                line = "overwrite \(file.path) = \(token.debugDescription)"
                try await device.write(file.path, token)
                contentChanged(file)
            case 6..<8:
                kind = "append"
                guard let file = rng.pick(writable) else { return "append: no file" }
                line = "append \(file.path) += \(token.debugDescription)"
                let handle = try await device.open(file.ino, flags: O_WRONLY | O_APPEND)
                defer { device.core.release(handle: handle) }
                _ = try await device.core.write(handle: handle, bytes: Array(token.utf8), offset: 0)
                contentChanged(file)
            case 8:
                kind = "truncate"
                guard let file = rng.pick(writable) else { return "truncate: no file" }
                let size = try device.core.attributes(file.ino).size
                let newSize = Int64(rng.below(Int(max(size, 1))))
                line = "truncate \(file.path) to \(newSize)"
                // A placeholder's content is downloaded by the truncate itself.
                _ = try await device.core.setAttributes(file.ino, AttributeChanges(size: newSize), handle: nil)
                contentChanged(file)
            case 9..<11:
                kind = "mkdir"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.folderNames)!)
                line = "mkdir \(path)"
                try device.mkdir(path)
                touch(chain(folder(path)))
            case 11..<14:
                kind = "rename"
                guard let source = rng.pick(all) else { return "rename: nothing" }
                let destination = rng.pick(folderPaths)!
                let taken = all.filter { $0.path != source.path && folder($0.path) == destination }.map { name($0.path) }
                let newName: String = switch rng.below(4) {
                case 0: name(source.path)
                case 1: rng.pick(taken) ?? name(source.path)
                default: rng.pick(source.kind == .directory ? Self.folderNames : Self.fileNames)!
                }
                let target = inside(destination, newName)
                line = "rename \(source.path) -> \(target)"
                try device.rename(source.path, target)
                touch(chain(source.path) + chain(destination))
                if let existing = byPath[target], existing.ino != source.ino {
                    try renamedOver(existing, by: source)
                }
            case 14:
                kind = "safe-save"
                // A file with one name: over one of several, the others keep the old content.
                guard let file = rng.pick(files.filter { $0.names == 1 }) else { return "safe-save: no file" }
                let temporary = inside(folder(file.path), ".saving")
                line = "safe-save \(file.path) = \(token.debugDescription)"
                if byPath[temporary] != nil { return line + " (temporary exists)" }
                try await device.write(temporary, token)
                try device.rename(temporary, file.path)
                models[index].writtenInodes.insert(try #require(device.inode(file.path)))
                touch(chain(file.path))
                models[index].contentEdits.insert(file.id)
            case 15..<17:
                kind = "delete"
                guard let item = rng.pick(all.filter { $0.kind != .directory }) else { return "delete: no file" }
                line = "delete \(item.path)"
                try unlink(item)
            case 17:
                kind = "rmdir"
                guard let folder = rng.pick(folders) else { return "rmdir: no folder" }
                line = "rmdir \(folder.path)"
                try unlink(folder)
            case 18:
                kind = "rm-r"
                guard let folder = rng.pick(folders) else { return "rm -r: no folder" }
                let inside = all.filter { $0.path.hasPrefix(folder.path + "/") }.sorted { $0.path.count > $1.path.count }
                line = "rm -r \(folder.path) (\(inside.count) inside)"
                for item in inside + [folder] { try unlink(item) }
            case 19:
                kind = "chmod"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "chmod: nothing" }
                let mode = rng.pick(Self.modes)!
                line = "chmod \(item.path) \(String(mode, radix: 8))"
                _ = try await device.core.setAttributes(item.ino, AttributeChanges(mode: mode), handle: nil)
                touch(chain(item.path))
            case 20:
                kind = "setxattr"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "setxattr: nothing" }
                let key = rng.pick(Self.xattrNames)!
                line = "setxattr \(item.path) \(key)=\(token.debugDescription)"
                try device.core.setXattr(item.ino, name: Array(key.utf8), value: Array(token.utf8), flags: 0)
                touch(chain(item.path))
            case 21:
                kind = "removexattr"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "removexattr: nothing" }
                let key = rng.pick(Self.xattrNames)!
                line = "removexattr \(item.path) \(key)"
                try device.core.removeXattr(item.ino, name: Array(key.utf8))
                touch(chain(item.path))
            case 22:
                kind = "symlink"
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                let target = rng.pick(["a.txt", "../d0/b.txt", "/tmp/elsewhere", "link-\(token.suffix(6))"])!
                line = "symlink \(path) -> \(target)"
                _ = try device.core.symlink(parent: try parentInode(device, path), name: Array(name(path).utf8), target: Array(target.utf8), caller: TestDevice.caller)
                touch(chain(folder(path)))
            case 23:
                kind = "exchange"
                guard let first = rng.pick(all), let second = rng.pick(all), first.path != second.path else { return "exchange: nothing" }
                line = "exchange \(first.path) <-> \(second.path)"
                let (parent, newParent) = (try parentInode(device, first.path), try parentInode(device, second.path))
                try device.core.rename(parent: parent, name: Array(name(first.path).utf8), newParent: newParent, newName: Array(name(second.path).utf8), exchange: true, noReplace: false)
                touch(chain(first.path) + chain(second.path))
            case 24, 25:
                kind = "link"
                guard let item = rng.pick(all.filter { $0.kind != .directory }) else { return "link: nothing" }
                let path = inside(rng.pick(folderPaths)!, rng.pick(Self.fileNames)!)
                line = "link \(item.path) as \(path)"
                try device.link(item.path, path)
                // A new name is a change of the item: it keeps an item deleted elsewhere.
                touch(chain(item.path) + chain(folder(path)))
            case 29:
                // Past the first MiB, files are cut into content-defined chunks: a large
                // file, or a line inserted into one, shifts everything after it.
                kind = "insert"
                guard let file = rng.pick(writable) else { return "insert: no file" }
                let content = try await device.readBytes(file.path)
                let inserted: [UInt8]
                if content.count < 1 << 20 {
                    inserted = content + Self.largeText(token, lines: 25_000 + rng.below(25_000))
                    line = "insert \(file.path): \(inserted.count) bytes ending with \(token.debugDescription)"
                } else {
                    let at = rng.below(content.count)
                    inserted = Array(content[..<at]) + Array("\(token)\n".utf8) + Array(content[at...])
                    line = "insert \(file.path) at \(at): \(token.debugDescription)"
                }
                try await device.write(file.path, inserted)
                contentChanged(file)
            case 30:
                kind = "in place"
                guard let file = rng.pick(writable.filter { (try? device.core.attributes($0.ino).size) ?? 0 > 1 << 20 }) else { return "in place: no large file" }
                let size = Int(try device.core.attributes(file.ino).size)
                let at = rng.below(size - token.utf8.count)
                line = "in place \(file.path) at \(at): \(token.debugDescription)"
                let handle = try await device.open(file.ino, flags: O_WRONLY)
                defer { device.core.release(handle: handle) }
                _ = try await device.core.write(handle: handle, bytes: Array(token.utf8), offset: Int64(at))
                contentChanged(file)
            default:
                kind = "evict"
                guard let item = rng.pick(all.filter { $0.kind != .symlink }) else { return "evict: nothing" }
                line = "evict \(item.path)"
                try device.core.evict(item.ino)
            }
        } catch let error as FileSystemError where Self.expectedRefusals.contains(error.code) || (kind == "evict" && error.code == .busy) {
            stats.refused[kind, default: 0] += 1
            return "\(line) (refused: \(error.code))"
        } catch where models[index].offline && isDownloadFailure(error) {
            stats.refused[kind, default: 0] += 1
            return "\(line) (offline: \(error))"
        }
        stats.operations[kind, default: 0] += 1
        return line
    }

    /// `lines` lines, each naming `token` and its number: a large file that deduplicates
    /// with nothing. A NUL in each line keeps it from merging as text (the model counts
    /// conflict copies as for the one-line files, which never merge), whatever a write in
    /// place overwrites.
    static func largeText(_ token: String, lines: Int) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(lines * (token.utf8.count + 10))
        for line in 0..<lines { text += Array("\(line) \(token)\0\n".utf8) }
        return text
    }

    func isDownloadFailure(_ error: any Error) -> Bool {
        if let error = error as? SyncError { return error.code == .unreachable }
        if let error = error as? FileSystemError { return error.code == .unreachable }
        return false
    }

    func parentInode(_ device: TestDevice, _ path: String) throws -> Inode {
        let parent = path.split(separator: "/").dropLast().joined(separator: "/")
        return try #require(device.inode(parent), "no folder \(parent) on \(device.name)")
    }
}
