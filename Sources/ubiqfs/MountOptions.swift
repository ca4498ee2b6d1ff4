import ArgumentParser
import Foundation
import S3Store
import ThumbnailService

/// What `ubiqfs mount` takes. These names are a contract that scripts and tests rely on.
struct MountOptions: ParsableArguments {
    @Argument(help: "The folder to mount the container on (it must exist), or the name of a mount in ~/.config/ubiqfs/mounts.conf.")
    var mountpoint: String

    @Option(help: "The store: a local folder (created if missing), or s3://BUCKET/PREFIX for an S3-compatible service (credentials, region and endpoint from AWS_* variables or ~/.aws). Default: ~/.local/share/ubiqfs/store")
    var store: String?

    @Option(help: "The container's name in the store. Default: default")
    var container: String?

    @Option(help: "This device's state: SQLite database and content cache. Default: ~/.local/state/ubiqfs/CONTAINER")
    var stateDir: String?

    @Option(help: "This device's name in the container (shown in conflict copies). Default: the host name.")
    var device: String?

    @Option(help: "How much local content to keep (e.g. 500M, 20G); least recently used, unpinned, uploaded items are evicted past it. Default: a quarter of the cache disk.")
    var cacheSize: String?

    @Option(help: "Deprecated and ignored: retention is the container's, the same on every device (`ubiqfs retention`).")
    var keepVersions: Double?

    @Option(help: "Store transfers at once in each direction (blocks of any files); more hide a far store's round trip, fewer spare a slow link. Lowered by itself while the store throttles (S3 SlowDown). 1 to 256. Default: 64")
    var transfers: Int?

    @Option(help: "Bandwidth limit per second, as rclone writes it: RATE for uploads and downloads, or UP:DOWN; each a size (512K, 10M, 1.5G) or off. Default: off")
    var bwlimit: String?

    @Flag(help: "Let other users reach the mount (FUSE allow_other; needs user_allow_other in /etc/fuse.conf unless root). Permissions are still checked by the kernel from each item's mode and owner.")
    var allowOther = false

    @Flag(help: "Forbid running programs from the mount (the mount option noexec).")
    var noexec = false

    @Option(help: "When reads move access times (this device's own, never synced): relatime (when older than the last change, or a day old, as ext4 by default), strictatime (every open for reading and folder listing) or noatime. Default: relatime")
    var atime: String?

    @Flag(help: "Folder listings leave folders' access times alone (the mount option nodiratime).")
    var noDirAtime = false

    @Option(help: "A file of ignore patterns for this device alone (gitignore syntax, as .ubiqfsignore): what they match stays on this device and is never synced. Read at each mount; a change applies to the items already there.")
    var ignoreFile: String?

    @Option(help: "Thumbnails that travel with the container: on (make pictures of photos, PDFs and videos here for the other devices, and put theirs into the desktop's thumbnail cache) or off. Default: on")
    var thumbnails: String?

    @Option(help: "The freedesktop thumbnail cache to put other devices' pictures into. Default: $XDG_CACHE_HOME/thumbnails, else ~/.cache/thumbnails")
    var thumbnailCache: String?

    @Option(help: "Programs that only look at files, added to the built-in list (GNOME, KDE and Xfce thumbnailers and indexers, file): KIND:NAME,... with KIND thumbnailer, indexer or sniffer; KIND:-NAME takes a name off. Their reads download no whole files.")
    var lookers: String?

    @Option(help: "Serve Prometheus metrics at http://ADDRESS/metrics and a health check at /healthz: PORT (on 127.0.0.1), or HOST:PORT to listen elsewhere (0.0.0.0:PORT for every address; there is no authentication). Default: off")
    var metrics: String?

    @Flag(help: "Send no desktop notifications (a conflict copy made, the store unreachable for 5 minutes, files used lately evicted by the cache budget).")
    var noNotify = false

    @Flag(help: "Mount read-only (the mount option ro): other devices' changes still arrive; nothing here is written or pushed.")
    var readOnly = false

    @Flag(help: "MOUNTPOINT must be the name of a mount in ~/.config/ubiqfs/mounts.conf; fail if there is none (the systemd unit uses this).")
    var profile = false

    @Flag(help: "Stay in the foreground instead of running as a daemon.")
    var foreground = false

    @Option(help: "trace, debug, info, notice, warning, error or critical. Default: info")
    var logLevel: String?

    @Option(help: .hidden)
    var readyFd: Int32?

    @Option(help: .hidden)
    var pollInterval: Double?

    /// Seconds a store call may take before the store counts as unreachable (tests shorten it).
    @Option(help: .hidden)
    var storeTimeout: Double?

    @Option(help: "Inject faults into every store call, to see how a bad network feels: latency=D (300ms, 2s), bandwidth=B (bytes/s: 512K, 2M), errors=P (0 to 1), lost=P (writes that happen but whose reply is lost), throttle=P (calls answered as S3 SlowDown), hang, blocks (only block transfers); comma-separated. `ubiqfs faults` changes them while mounted.")
    var storeFaults: String?

    @Option(help: .hidden)
    var checkpointInterval: UInt64?

    @Flag(help: "Accept an http:// endpoint at an AWS name (AWS_ENDPOINT_URL): signed requests, names and the content of a container that is not encrypted then travel in clear. Other plain http endpoints are accepted with a warning in the log.")
    var allowPlainHTTP = false

    @Flag(help: "Create the container encrypted, if it does not exist yet (format 2): names, content, xattrs and the tree's shape are sealed before they reach the store. Needs a passphrase (--passphrase-file, or asked on the terminal).")
    var encrypt = false

    @Option(help: "A file whose first line is the passphrase of an encrypted container. Default: the file $UBIQFS_PASSPHRASE_FILE names, then the systemd credential ubiqfs-passphrase, then a terminal prompt when one is needed. Once mounted, the device keeps the container's key in its state dir (mode 0600): remounts need no passphrase.")
    var passphraseFile: String?

    /// The daemon reads the passphrase its launcher resolved from this descriptor.
    @Option(help: .hidden)
    var passphraseFd: Int32?

    @Flag(help: "Show the mount's type as plain fuse instead of fuse.ubiqfs (the mount option subtype=), for tools that expect fuse (xfstests).")
    var plainFuseType = false

    var resolvedMountpoint: String { Paths.absolute(mountpoint) }
    /// An `s3://` address as given; a local folder made absolute.
    var resolvedStore: String {
        guard let store, S3Location.isS3(store) else { return Paths.absolute(store ?? Paths.defaultStore) }
        return store
    }
    var resolvedStateDir: String { Paths.absolute(stateDir ?? Paths.defaultStateDir(container: resolvedContainer)) }
    var resolvedContainer: String { container ?? "default" }
    var resolvedLogLevel: String { logLevel ?? "info" }

    /// With a profile's settings when the mountpoint argument names one, and that profile.
    func resolvingProfile() throws -> (options: MountOptions, profile: MountProfile?) {
        guard let named = try MountProfile.resolving(mountpoint) else {
            if profile { throw CommandFailure("no mount named '\(mountpoint)' in \(MountProfile.configurationFile)") }
            return (self, nil)
        }
        return (try applying(named), named)
    }

    /// Fills what the command line left out from a profile (`ubiqfs mount NAME`).
    func applying(_ profile: MountProfile) throws -> MountOptions {
        var options = self
        let settings = profile.settings
        options.mountpoint = settings["mountpoint"] ?? mountpoint
        options.store = store ?? settings["store"]
        options.container = container ?? settings["container"]
        // Each profile its own state by default: two profiles may name the same container
        // in different stores, and a state dir belongs to one container of one store.
        options.stateDir = stateDir ?? settings["state-dir"] ?? Paths.defaultStateDir(container: profile.name)
        options.device = device ?? settings["device"]
        options.cacheSize = cacheSize ?? settings["cache-size"]
        options.logLevel = logLevel ?? settings["log-level"]
        options.bwlimit = bwlimit ?? settings["bwlimit"]
        options.passphraseFile = passphraseFile ?? settings["passphrase-file"]
        options.ignoreFile = ignoreFile ?? settings["ignore-file"]
        options.thumbnails = thumbnails ?? settings["thumbnails"]
        options.thumbnailCache = thumbnailCache ?? settings["thumbnail-cache"]
        options.lookers = lookers ?? settings["lookers"]
        options.metrics = metrics ?? settings["metrics"]
        if transfers == nil, let count = settings["transfers"] {
            guard let value = Int(count) else { throw CommandFailure("\(profile.source): [\(profile.name)] transfers = \(count): expected a number") }
            options.transfers = value
        }
        if keepVersions == nil, let days = settings["keep-versions"] {
            guard let value = Double(days) else { throw CommandFailure("\(profile.source): [\(profile.name)] keep-versions = \(days): expected a number of days") }
            options.keepVersions = value
        }
        options.allowOther = try allowOther || profile.bool("allow-other") ?? false
        options.noexec = try noexec || profile.bool("noexec") ?? false
        options.readOnly = try readOnly || profile.bool("read-only") ?? false
        options.noNotify = try noNotify || profile.bool("no-notify") ?? false
        return options
    }

    /// The same options as arguments of `ubiqfs mount`, every path absolute and every
    /// default filled in, for the daemon process (which must not depend on our working
    /// directory, environment or profile file changing under it).
    var commandLine: [String] {
        // KEY=VALUE, so a value that starts with '-' stays a value.
        var arguments = [
            "mount", resolvedMountpoint, "--store=" + resolvedStore, "--container=" + resolvedContainer,
            "--state-dir=" + resolvedStateDir, "--device=" + resolvedDevice,
            "--log-level=" + resolvedLogLevel,
        ]
        if let cacheSize { arguments.append("--cache-size=" + cacheSize) }
        if let keepVersions { arguments.append("--keep-versions=\(keepVersions)") }
        if let transfers { arguments.append("--transfers=\(transfers)") }
        if let bwlimit { arguments.append("--bwlimit=" + bwlimit) }
        if let metrics { arguments.append("--metrics=" + metrics) }
        if allowOther { arguments.append("--allow-other") }
        if noexec { arguments.append("--noexec") }
        if let atime { arguments.append("--atime=" + atime) }
        if noDirAtime { arguments.append("--no-dir-atime") }
        if let ignoreFile { arguments.append("--ignore-file=" + Paths.absolute(ignoreFile)) }
        if let thumbnails { arguments.append("--thumbnails=" + thumbnails) }
        // The daemon's environment may differ (systemd): the cache is named for it.
        if let cache = thumbnailCache ?? ThumbnailSettings.userCacheRoot(environment: ProcessInfo.processInfo.environment) {
            arguments.append("--thumbnail-cache=" + Paths.absolute(cache))
        }
        if let lookers { arguments.append("--lookers=" + lookers) }
        if readOnly { arguments.append("--read-only") }
        if noNotify { arguments.append("--no-notify") }
        if foreground { arguments.append("--foreground") }
        if let readyFd { arguments.append("--ready-fd=\(readyFd)") }
        if let pollInterval { arguments.append("--poll-interval=\(pollInterval)") }
        if let storeTimeout { arguments.append("--store-timeout=\(storeTimeout)") }
        if let storeFaults { arguments.append("--store-faults=" + storeFaults) }
        if let checkpointInterval { arguments.append("--checkpoint-interval=\(checkpointInterval)") }
        if plainFuseType { arguments.append("--plain-fuse-type") }
        if allowPlainHTTP { arguments.append("--allow-plain-http") }
        if encrypt { arguments.append("--encrypt") }
        if let passphraseFd { arguments.append("--passphrase-fd=\(passphraseFd)") }
        return arguments
    }
    /// The host name with the default state dir; with another (a second device on this
    /// host), the host name and that folder's name, so conflict copies say whose they are.
    var resolvedDevice: String {
        if let device { return device }
        let host = Paths.hostName
        guard resolvedStateDir != Paths.absolute(Paths.defaultStateDir(container: resolvedContainer)) else { return host }
        var name = host + "-" + (resolvedStateDir.split(separator: "/").last.map(String.init) ?? "")
        while name.utf8.count > 64 { name.removeLast() }
        return name
    }
}
