import Foundation

/// Default locations, following the XDG base directory conventions.
enum Paths {
    static var home: String { ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory() }

    static var defaultStore: String {
        (ProcessInfo.processInfo.environment["XDG_DATA_HOME"] ?? home + "/.local/share") + "/ubiqfs/store"
    }

    static func defaultStateDir(container: String) -> String {
        (ProcessInfo.processInfo.environment["XDG_STATE_HOME"] ?? home + "/.local/state") + "/ubiqfs/" + container
    }

    /// Absolute and normalised by string rules only: no stat, because the path may be a
    /// FUSE mount that this very process serves (a stat before the loop runs would hang).
    static func absolute(_ path: String) -> String {
        String(decoding: absolute(bytes: Array(path.utf8)), as: UTF8.self)
    }

    /// The bytes the user gave for `argument`: argv as the kernel passed it, since Swift
    /// decodes a name that is not UTF-8 with U+FFFD (which names another file, or none).
    static func rawArgument(_ argument: String) -> [UInt8] {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let bytes = Array(UnsafeBufferPointer(start: pointer, count: strlen(pointer))).map { UInt8(bitPattern: $0) }
            if String(decoding: bytes, as: UTF8.self) == argument { return bytes }
        }
        return Array(argument.utf8)
    }

    /// `absolute` on bytes, for a path that may not be UTF-8 (the same rules).
    static func absolute(bytes path: [UInt8]) -> [UInt8] {
        let slash = UInt8(ascii: "/")
        var full = path
        if full == [UInt8(ascii: "~")] || full.starts(with: Array("~/".utf8)) { full = Array(home.utf8) + full.dropFirst() }
        if full.first != slash { full = Array(FileManager.default.currentDirectoryPath.utf8) + [slash] + full }
        var parts: [ArraySlice<UInt8>] = []
        for part in full.split(separator: slash) {
            if part.elementsEqual([UInt8(ascii: ".")]) { continue }
            if part.elementsEqual(Array("..".utf8)) {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        return parts.isEmpty ? [slash] : parts.reduce(into: []) { $0 += [slash] + $1 }
    }

    static var hostName: String {
        var buffer = [UInt8](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        let name = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
        return name.isEmpty ? "linux" : name
    }
}
