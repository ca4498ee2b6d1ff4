import Foundation

/// A temporary folder for one test, removed when the test lets go of it.
final class Scratch {
    let path: String

    init(_ label: String = "test") throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("ubiqfs-thumbnails-\(label)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes a file (and its folders) below the scratch folder; its full path.
    @discardableResult
    func write(_ relative: String, _ bytes: [UInt8], mode: Int = 0o644) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: full)
        return full
    }

    func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: path + "/" + relative)
    }

    /// The permission bits of a file or folder below the scratch folder.
    func mode(_ relative: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path + "/" + relative)[.posixPermissions] as? Int) ?? -1
    }

    /// Every file below a folder, relative to the scratch folder, sorted.
    func files(under relative: String = "") -> [String] {
        let base = relative.isEmpty ? path : path + "/" + relative
        let found = FileManager.default.enumerator(atPath: base)?.compactMap { $0 as? String } ?? []
        return found.filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: base + "/" + name, isDirectory: &isFolder) && !isFolder.boolValue
        }.map { relative.isEmpty ? $0 : relative + "/" + $0 }.sorted()
    }
}
