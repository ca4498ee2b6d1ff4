internal import CFuse3

/// The connection parameters negotiated at mount (`struct fuse_conn_info`), handed to
/// `FuseOperations.initialize` so the filesystem can change `want` and the size limits.
public struct FuseConnectionInfo: Sendable {
    public internal(set) var protocolMajor: UInt32
    public internal(set) var protocolMinor: UInt32
    /// What the kernel offers; `want` is reduced to these before it is sent (asking for more aborts the mount).
    public internal(set) var capable: FuseCapabilities
    /// What the filesystem asks for. Preset: libfuse's defaults (which include auto_inval_data and
    /// async direct I/O) plus readdirplus (always), atomic O_TRUNC, async read and parallel dirops;
    /// without writeback cache, and without handle_killpriv, so the kernel clears suid/sgid itself.
    /// Readdirplus is always used: `unwanted` says why.
    public var want: FuseCapabilities
    /// Largest write request in bytes (1 MiB by default on this kernel).
    public var maxWrite: UInt32
    /// Largest readahead in bytes; the kernel uses the smaller of this and its own limit.
    public var maxReadahead: UInt32
    /// Largest number of background requests (async reads, writeback) in flight.
    public var maxBackground: UInt32
    /// Background requests in flight at which the kernel considers the filesystem congested.
    public var congestionThreshold: UInt32
    /// Timestamp granularity in nanoseconds (0 or 1 = nanosecond).
    public var timeGranularity: UInt32

    /// FuseKit's defaults applied on top of libfuse's.
    static let defaultWants: FuseCapabilities = [
        .readdirplus, .atomicOTrunc, .asyncRead, .parallelDirectoryOperations,
    ]

    /// libfuse's defaults taken away. `readdirplusAuto`: the kernel's heuristic sends plain
    /// readdir after the first batch unless a lookup came in between, so a file manager that
    /// lists first and stats after costs a LOOKUP per entry (a view of 500 photos: 1,664
    /// requests instead of 558).
    static let unwanted: FuseCapabilities = [.writebackCache, .handleKillPriv, .readdirplusAuto]

    init(_ conn: fuse_conn_info) {
        protocolMajor = conn.proto_major
        protocolMinor = conn.proto_minor
        capable = FuseCapabilities(rawValue: conn.capable)
        want = FuseCapabilities(rawValue: conn.want)
            .union(Self.defaultWants)
            .subtracting(Self.unwanted)
            .intersection(capable)
        maxWrite = conn.max_write
        maxReadahead = conn.max_readahead
        maxBackground = conn.max_background
        congestionThreshold = conn.congestion_threshold
        timeGranularity = conn.time_gran
    }

    func apply(to conn: inout fuse_conn_info) {
        conn.want = want.intersection(capable).rawValue
        conn.max_write = maxWrite
        conn.max_readahead = maxReadahead
        conn.max_background = maxBackground
        conn.congestion_threshold = congestionThreshold
        conn.time_gran = timeGranularity
    }
}
