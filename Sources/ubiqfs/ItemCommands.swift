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

struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", abstract: "Download items (folders: everything inside) and return when they are local.")
    @OptionGroup var items: ItemPaths

    func run() throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        try ItemXattrs.each(items.paths) { path in
            for file in try Self.files(under: path) { try Self.download(file, terminal: terminal) }
        }
    }

    static func files(under path: String) throws -> [String] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw CommandFailure("\(path): no such file or folder")
        }
        guard isFolder.boolValue else { return [path] }
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let relative = enumerator?.nextObject() as? String {
            let full = path + "/" + relative
            var folder: ObjCBool = false
            if FileManager.default.fileExists(atPath: full, isDirectory: &folder), !folder.boolValue { files.append(full) }
        }
        return files.sorted()
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
