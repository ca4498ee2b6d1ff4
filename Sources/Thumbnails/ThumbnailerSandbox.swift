import Glibc
import Synchronization

/// How a thumbnailer is confined: under bubblewrap with the arguments gnome-desktop 43 gives
/// it (`gnome-desktop-thumbnail-script.c:add_bwrap`), so any thumbnailer that works from the
/// desktop works here, or not at all where bwrap cannot make namespaces (in a container,
/// say). Seccomp filters, which gnome-desktop adds through libseccomp, are left out.
final class ThumbnailerSandbox: Sendable {
    /// Whether to use bubblewrap.
    enum Mode: Sendable, Equatable {
        /// When `bwrap` is installed and a trial run under it works.
        case automatic
        /// Always (a run fails if bwrap does).
        case bubblewrap
        /// Never: the thumbnailer runs directly, on a symlink to the source.
        case none
    }

    /// The name the input has inside the work folder, with the item's real extension.
    static let inputName = "gnome-desktop-file-to-thumbnail"
    static let outputName = "gnome-desktop-thumbnailer.png"

    let mode: Mode
    /// The GStreamer registry folder bound in (gnome-desktop's, under the user's cache), if any.
    let gstreamerCache: String?
    /// Whether the trial run worked, once it has run.
    private let works = Mutex<Bool?>(nil)

    init(mode: Mode, gstreamerCache: String?) {
        self.mode = mode
        self.gstreamerCache = gstreamerCache
    }

    /// Whether runs go under bwrap: in automatic mode, decided by one trial run of /usr/bin/true.
    func isUsed(timeout: Duration) async -> Bool {
        switch mode {
        case .none: return false
        case .bubblewrap: return true
        case .automatic:
            if let known = works.withLock({ $0 }) { return known }
            let result = await trial(timeout: timeout)
            works.withLock { $0 = result }
            return result
        }
    }

    private func trial(timeout: Duration) async -> Bool {
        guard ProgramSearch.find("bwrap") != nil, let folder = try? WorkFolder() else { return false }
        defer { folder.remove() }
        let input = folder.path + "/input"
        let output = folder.path + "/output"
        guard (try? CacheFiles.makeFolder(output)) != nil, (try? CacheFiles.writeAtomically([], to: input)) != nil else { return false }
        let arguments = prefix(workFolder: output, source: input, fileExtension: nil) + ["/usr/bin/true"]
        let exit = try? await ChildProcess.run(arguments, errorFile: folder.path + "/errors", timeout: timeout)
        return exit?.status == 0
    }

    /// Where the thumbnailer finds its input and puts its output: inside the sandbox, /tmp
    /// is the work folder; outside, the work folder itself.
    func paths(workFolder: String, fileExtension: String?, sandboxed: Bool) -> (input: String, output: String) {
        let folder = sandboxed ? "/tmp" : workFolder
        let input = Self.inputName + (fileExtension.map { "." + $0 } ?? "")
        return ("\(folder)/\(input)", "\(folder)/\(Self.outputName)")
    }

    /// `bwrap` and its arguments, up to the thumbnailer's command: /usr and the usr-merged
    /// folders read-only, a fresh /proc and /dev, every namespace unshared, the work folder
    /// as /tmp and the source read-only at its input path there.
    func prefix(workFolder: String, source: String, fileExtension: String?) -> [String] {
        var arguments = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        for folder in ["/bin", "/lib64", "/lib", "/sbin"] where access(folder, F_OK) == 0 {
            arguments += Self.isUsrMerged(folder) ? ["--symlink", "/usr" + folder, folder] : ["--ro-bind", folder, folder]
        }
        arguments += ["--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig"]
        if let gstreamerCache, (try? CacheFiles.makeFolder(gstreamerCache)) != nil {
            arguments += ["--setenv", "GST_REGISTRY_1_0", "\(gstreamerCache)/\(Self.gstreamerRegistry)", "--bind", gstreamerCache, gstreamerCache]
        }
        arguments += ["--ro-bind-try", "/etc/alternatives", "/etc/alternatives"]
        arguments += ["--proc", "/proc", "--dev", "/dev", "--chdir", "/", "--setenv", "GIO_USE_VFS", "local", "--unshare-all", "--die-with-parent"]
        let input = paths(workFolder: workFolder, fileExtension: fileExtension, sandboxed: true).input
        return arguments + ["--bind", workFolder, "/tmp", "--ro-bind", source, input]
    }

    /// Whether /bin (say) is the same folder as /usr/bin.
    private static func isUsrMerged(_ folder: String) -> Bool {
        var top = stat(), usr = stat()
        guard stat(folder, &top) == 0, stat("/usr" + folder, &usr) == 0 else { return false }
        return top.st_dev == usr.st_dev && top.st_ino == usr.st_ino
    }

    /// gnome-desktop's GST_REGISTRY_FILENAME: "registry.<cpu family>.bin".
    private static var gstreamerRegistry: String {
        #if arch(x86_64)
        "registry.x86_64.bin"
        #elseif arch(arm64)
        "registry.aarch64.bin"
        #else
        "registry.bin"
        #endif
    }
}
