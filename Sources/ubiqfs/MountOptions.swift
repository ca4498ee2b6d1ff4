import ArgumentParser
import S3Store

/// What `ubiqfs mount` takes. These names are a contract that scripts and tests rely on.
struct MountOptions: ParsableArguments {
    @Argument(help: "The folder to mount the container on (it must exist).")
    var mountpoint: String

    @Option(help: "The store: a local folder (created if missing), or s3://BUCKET/PREFIX for an S3-compatible service (credentials, region and endpoint from AWS_* variables or ~/.aws). Default: ~/.local/share/ubiqfs/store")
    var store: String?

    @Option(help: "The container's name in the store.")
    var container: String = "default"

    @Option(help: "This device's state: SQLite database and content cache. Default: ~/.local/state/ubiqfs/CONTAINER")
    var stateDir: String?

    @Option(help: "This device's name in the container (shown in conflict copies). Default: the host name.")
    var device: String?

    @Option(help: "How much local content to keep (e.g. 500M, 20G); least recently used, unpinned, uploaded items are evicted past it. Default: a quarter of the cache disk.")
    var cacheSize: String?

    @Option(help: "How many days earlier versions of files stay listed and restorable (`ubiqfs versions`); the newest always does.")
    var keepVersions: Double = 30

    @Flag(help: "Let other users reach the mount (FUSE allow_other; needs user_allow_other in /etc/fuse.conf unless root). Permissions are still checked by the kernel from each item's mode and owner.")
    var allowOther = false

    @Flag(help: "Stay in the foreground instead of running as a daemon.")
    var foreground = false

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(help: .hidden)
    var readyFd: Int32?

    @Option(help: .hidden)
    var pollInterval: Double?

    /// Seconds a store call may take before the store counts as unreachable (tests shorten it).
    @Option(help: .hidden)
    var storeTimeout: Double?

    @Option(help: "Inject faults into every store call, to see how a bad network feels: latency=D (300ms, 2s), bandwidth=B (bytes/s: 512K, 2M), errors=P (0 to 1), lost=P (writes that happen but whose reply is lost), hang, blocks (only block transfers); comma-separated. `ubiqfs faults` changes them while mounted.")
    var storeFaults: String?

    @Option(help: .hidden)
    var checkpointInterval: UInt64?

    var resolvedMountpoint: String { Paths.absolute(mountpoint) }
    /// An `s3://` address as given; a local folder made absolute.
    var resolvedStore: String {
        guard let store, S3Location.isS3(store) else { return Paths.absolute(store ?? Paths.defaultStore) }
        return store
    }
    var resolvedStateDir: String { Paths.absolute(stateDir ?? Paths.defaultStateDir(container: container)) }
    var resolvedDevice: String { device ?? Paths.hostName }
}
