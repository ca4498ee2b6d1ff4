import ArgumentParser
import Foundation
import Glibc

struct ItemPaths: ParsableArguments {
    @Argument(help: "Files or folders inside a ubiqfs mount.")
    var paths: [String]
}

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pin", abstract: "Keep items local: download now, never evict (folders: everything inside, now and later).")
    @OptionGroup var items: ItemPaths
    func run() throws { try ItemXattrs.each(items.paths) { try ItemXattrs.set($0, "user.ubiqfs.pinned", "1") } }
}

struct UnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpin", abstract: "Return items to automatic management.")
    @OptionGroup var items: ItemPaths
    func run() throws { try ItemXattrs.each(items.paths) { try ItemXattrs.set($0, "user.ubiqfs.pinned", "0") } }
}

struct EvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "evict", abstract: "Drop local content, keeping items as placeholders.")
    @OptionGroup var items: ItemPaths
    func run() throws { try ItemXattrs.each(items.paths) { try ItemXattrs.set($0, "user.ubiqfs.evict", "1") } }
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

    /// Opening the file downloads it; the progress xattr is shown meanwhile.
    static func download(_ path: String, terminal: Bool) throws {
        let opened = DispatchSemaphore(value: 0)
        let outcome = OpenOutcome()
        Thread.detachNewThread {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            outcome.errno = fd < 0 ? errno : 0
            if fd >= 0 { close(fd) }
            opened.signal()
        }
        var lastShown = -1
        while opened.wait(timeout: .now() + .milliseconds(200)) == .timedOut {
            let percent = Int(ItemXattrs.get(path, "user.ubiqfs.progress") ?? "0") ?? 0
            if terminal {
                let bar = String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5)
                FileHandle.standardOutput.write(Data("\r[\(bar)] \(percent)% \(path)".utf8))
            } else if percent / 25 != lastShown / 25 {
                print("\(percent)% \(path)")
            }
            lastShown = percent
        }
        if outcome.errno != 0 {
            if terminal { print("") }
            throw CommandFailure("\(path): \(String(cString: strerror(outcome.errno)))")
        }
        // Opening for reading returns while the download goes on: wait until it is local.
        while ItemXattrs.get(path, "user.ubiqfs.state") == "downloading" {
            let percent = Int(ItemXattrs.get(path, "user.ubiqfs.progress") ?? "0") ?? 0
            if terminal {
                let bar = String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5)
                FileHandle.standardOutput.write(Data("\r[\(bar)] \(percent)% \(path)".utf8))
            }
            usleep(200_000)
        }
        if let error = ItemXattrs.get(path, "user.ubiqfs.error") {
            if terminal { print("") }
            throw CommandFailure("\(path): \(error)")
        }
        print(terminal ? "\r[####################] 100% \(path)" : "100% \(path)")
    }
}

final class OpenOutcome: @unchecked Sendable {
    var errno: Int32 = 0
}
