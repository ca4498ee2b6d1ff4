import Foundation

/// `container.json`: written once with put-if-absent when the container is created;
/// every device reads it before anything else and refuses formats it does not know.
public struct ContainerInfo: Hashable, Sendable, Codable {
    /// What a new container gets, and the newest format this version reads and writes.
    public static let currentFormat = 5
    /// The newest format this process reads and writes: `currentFormat`, or less as
    /// `UBIQFS_FORMAT=1` to `4` in the daemon's environment says, a device of an earlier
    /// release (tests make old containers and old devices with it; nobody else needs it).
    public static var newestFormat: Int {
        guard let value = ProcessInfo.processInfo.environment["UBIQFS_FORMAT"].flatMap(Int.init), (1..<currentFormat).contains(value) else {
            return currentFormat
        }
        return value
    }

    /// The formats a device whose newest is `newest` reads: every one up to it.
    public static func readableFormats(newest: Int) -> ClosedRange<Int> {
        1 ... max(1, min(newest, currentFormat))
    }

    public static let defaultBlockSize: Int64 = 4 * 1024 * 1024

    /// An encrypted container's scheme, and the authenticator of the fields above it
    /// (docs/CONTAINER-FORMAT.md, "Encryption"); nil: not encrypted.
    public struct Encryption: Hashable, Sendable, Codable {
        public var scheme: String
        public var check: String

        public init(scheme: String, check: String) {
            self.scheme = scheme
            self.check = check
        }
    }

    public var format: Int
    public var id: String
    public var encryption: Encryption?
    public var blockSize: Int64
    /// Nanoseconds since the epoch.
    public var created: Int64

    /// A file's first block is at most this long: a reader of a placeholder waits until a
    /// whole block has arrived and matched its hash, so a short first block brings the first
    /// byte (and what `file` or a thumbnailer reads) sooner.
    public static let leadingBlockSize: Int64 = 256 * 1024
    /// The second block ends at 1 MiB, so the first MiB (headers, indexes, the start of a
    /// media file) does not wait for a whole `blockSize` block either.
    public static let secondBlockSize: Int64 = 768 * 1024

    /// The lengths of a file's first two blocks when ubiqfs writes them (content-defined
    /// chunks follow: `BlockCutting`). Readers never assume them: they take the lengths
    /// from the record.
    public var leadingBlockLengths: [Int] {
        [Int(min(blockSize, Self.leadingBlockSize)), Int(min(blockSize, Self.secondBlockSize))]
    }

    public init(id: String, format: Int = Self.currentFormat, blockSize: Int64 = Self.defaultBlockSize, created: Int64) {
        self.format = format
        self.id = id
        self.blockSize = blockSize
        self.created = created
    }
}
