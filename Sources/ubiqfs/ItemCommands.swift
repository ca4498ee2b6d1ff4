import ArgumentParser
import Foundation
import Glibc

struct ItemPaths: ParsableArguments {
    @Argument(help: "Files or folders inside a ubiqfs mount.")
    var paths: [String]
}

/// A command that writes one `user.ubiqfs.*` xattr on every path: the CLI and setfattr are one interface.
protocol XattrItemCommand: ParsableCommand {
    static var xattr: (name: String, value: String) { get }
    var items: ItemPaths { get }
}

extension XattrItemCommand {
    func run() throws {
        try ItemXattrs.each(items.paths) { try ItemXattrs.set($0, Self.xattr.name, Self.xattr.value) }
    }
}

struct PinCommand: XattrItemCommand {
    static let configuration = CommandConfiguration(commandName: "pin", abstract: "Keep items local: download now, never evict (folders: everything inside, now and later).")
    static let xattr = (name: "user.ubiqfs.pinned", value: "1")
    @OptionGroup var items: ItemPaths
}

struct UnpinCommand: XattrItemCommand {
    static let configuration = CommandConfiguration(commandName: "unpin", abstract: "Return items to automatic management.")
    static let xattr = (name: "user.ubiqfs.pinned", value: "0")
    @OptionGroup var items: ItemPaths
}

struct EvictCommand: XattrItemCommand {
    static let configuration = CommandConfiguration(commandName: "evict", abstract: "Drop local content, keeping items as placeholders.")
    static let xattr = (name: "user.ubiqfs.evict", value: "1")
    @OptionGroup var items: ItemPaths
}

struct IgnoreCommand: XattrItemCommand {
    static let configuration = CommandConfiguration(commandName: "ignore", abstract: "Keep items on this device only: they leave the container for the other devices, and never sync (folders: everything inside).")
    static let xattr = (name: "user.ubiqfs.ignored", value: "1")
    @OptionGroup var items: ItemPaths
}

struct UnignoreCommand: XattrItemCommand {
    static let configuration = CommandConfiguration(commandName: "unignore", abstract: "Let items sync again (uploaded as new), unless a .ubiqfsignore pattern, a .nosync name or this device's --ignore-file keeps them here.")
    static let xattr = (name: "user.ubiqfs.ignored", value: "0")
    @OptionGroup var items: ItemPaths
}

struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", abstract: "Download items (folders: everything inside) and return when they are local.")
    @OptionGroup var items: ItemPaths

    func run() throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        try ItemXattrs.each(items.paths) { path in
            for file in try Self.files(under: path) { try Self.download(file, terminal: terminal) }
        }
    }

    /// The regular files at or under `path`, never through a symlink (a link in the
    /// container, to a file or a folder, is an item of its own with nothing to download).
    static func files(under path: String) throws -> [String] {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw CommandFailure("\(path): no such file or folder") }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return [path]
        case S_IFDIR: break
        case S_IFLNK: throw CommandFailure("\(path) is a symlink: ubiqfs acts on files and folders, never on what a link points to")
        default: return []
        }
        var files: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() {
            let full = path + "/" + name
            guard lstat(full, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: files.append(full)
            case S_IFDIR: files += try Self.files(under: full)
            default: continue
            }
        }
        return files
    }

    /// `user.ubiqfs.download` starts the download (and returns at once); the progress
    /// xattr is shown until the file is local.
    static func download(_ path: String, terminal: Bool) throws {
        try ItemXattrs.set(path, "user.ubiqfs.download", "1")
        var lastShown = -1
        while ["downloading", "placeholder", "partial"].contains(ItemXattrs.get(path, "user.ubiqfs.state")) {
            let percent = Int(ItemXattrs.get(path, "user.ubiqfs.progress") ?? "0") ?? 0
            if terminal {
                let bar = String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5)
                FileHandle.standardOutput.write(Data("\r[\(bar)] \(percent)% \(path)".utf8))
            } else if percent / 25 != lastShown / 25 {
                print("\(percent)% \(path)")
            }
            lastShown = percent
            usleep(200_000)
        }
        if let error = ItemXattrs.get(path, "user.ubiqfs.error") {
            if terminal { print("") }
            throw CommandFailure("\(path): \(error)")
        }
        print(terminal ? "\r[####################] 100% \(path)" : "100% \(path)")
    }
}
