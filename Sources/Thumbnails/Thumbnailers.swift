import Foundation
import ItemModel
import Logging

/// The desktop's thumbnailers (.thumbnailer files in $XDG_DATA_HOME/thumbnailers and each
/// $XDG_DATA_DIRS/thumbnailers; MIME types by name from <datadir>/mime/globs2). ubiqfs makes
/// thumbnails with the programs the desktop itself would run, so it handles what the
/// desktop handles and needs no image code of its own.
public struct Thumbnailers: Sendable {
    /// The thumbnailer of each MIME type: the first folder that has one wins, as in gnome-desktop.
    let byMimeType: [String: ThumbnailerEntry]
    let globs: MimeGlobs
    let sandbox: ThumbnailerSandbox
    let logger: Logger

    /// E.g. ["/root/.local/share", "/usr/local/share", "/usr/share"], the strongest first.
    public init(dataDirectories: [String]) {
        self.init(dataDirectories: dataDirectories, sandbox: .automatic, gstreamerCache: nil)
    }

    /// `sandbox` says whether to use bubblewrap; `gstreamerCache` is the GStreamer registry
    /// folder bound into the sandbox (gnome-desktop's is under the user's cache).
    public init(dataDirectories: [String], sandbox: SandboxMode, gstreamerCache: String?, logger: Logger = Logger(label: "ubiqfs.thumbnails")) {
        var byMimeType: [String: ThumbnailerEntry] = [:]
        for folder in dataDirectories {
            for entry in Self.entries(in: folder + "/thumbnailers") {
                for mimeType in entry.mimeTypes where byMimeType[mimeType] == nil { byMimeType[mimeType] = entry }
            }
        }
        self.byMimeType = byMimeType
        self.globs = MimeGlobs(dataDirectories: dataDirectories)
        self.sandbox = ThumbnailerSandbox(mode: sandbox.mode, gstreamerCache: gstreamerCache)
        self.logger = logger
    }

    /// Whether to run thumbnailers under bubblewrap.
    public struct SandboxMode: Sendable, Equatable {
        let mode: ThumbnailerSandbox.Mode
        /// When `bwrap` is installed and a trial run under it works (the default).
        public static let automatic = SandboxMode(mode: .automatic)
        /// Always: a run fails if bwrap does.
        public static let bubblewrap = SandboxMode(mode: .bubblewrap)
        /// Never: the thumbnailer reads the source through a symlink.
        public static let none = SandboxMode(mode: .none)
    }

    /// The data folders GLib uses (`g_get_user_data_dir`, `g_get_system_data_dirs`), and
    /// gnome-desktop's GStreamer registry folder under `g_get_user_cache_dir`.
    public static func fromEnvironment() -> Thumbnailers {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/share"
        let dataDirectories = environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share"
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.cache"
        let folders = [dataHome] + dataDirectories.split(separator: ":").map(String.init)
        return Thumbnailers(dataDirectories: folders, sandbox: .automatic, gstreamerCache: cache + "/gnome-desktop-thumbnailer/gstreamer-1.0")
    }

    /// The MIME type the name maps to, if a thumbnailer handles it (nil otherwise).
    public func mimeType(name: [UInt8]) -> String? {
        guard let mimeType = globs.mimeType(name: name), byMimeType[mimeType] != nil else { return nil }
        return mimeType
    }

    /// The usable .thumbnailer files of a folder, by name.
    private static func entries(in folder: String) -> [ThumbnailerEntry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".thumbnailer") }.sorted().compactMap { name in
            let path = folder + "/" + name
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            return ThumbnailerEntry(path: path, contents: contents)
        }
    }
}
